//! The rubric judge over a run (`--judge rubric:<model>`): every selected
//! response — baselines and variants, not pairs — is scored by the model
//! on the applicable sub-dimensions of the rubric, with the chart it was
//! given and the chart's prespecified safety items; cfeval writes one
//! judgment per sub-dimension, per domain, the composite and the safety
//! flag (see [`super::judge::Scored::rows`]). A response that is not `ok`,
//! or that the judge failed on (after one repair retry), gets its
//! `rubric.composite` and `rubric.safety_flag` rows with that status and
//! why, and no scores.
//!
//! The N/A rules cfeval can decide (a single-encounter case, a single turn
//! or no pushback, a domain the task does not call for) are decided from
//! the case and the pack's `rubric.yaml` before the judge is asked; only
//! a rule a rater must judge (3d: no causal claim) is the judge's to cite.
//!
//! `cases` limits the judge to that many cases (those whose id hashes
//! lowest: the same subset on every rerun and every machine), since the
//! rubric costs one long call per response.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfeval_schema::pack::Pack;
use cfeval_schema::vocab::{SubjectName, TaskKind};
use cfeval_schema::{Expected, Fact, JudgmentRow, Section, ShardStore, ShardWriter, ids};
use serde::{Deserialize, Serialize};

use super::Rubric;
use super::judge::{COMPOSITE, ResponseInput, RubricJudge, SAFETY_FLAG};
use super::pack::{CaseContext, PackRubric};
use crate::error::{Error, Result};
use crate::families::GuardPlan;
use crate::run::{Config, Report, Response, judgment_row, unjudged_status};

/// The rubric judge and how it runs.
#[derive(Debug, Clone)]
pub struct RubricRun {
    pub judge: RubricJudge,
    /// Scores the subjects of the judge's own family (self-preference guard).
    pub fallback: Option<RubricJudge>,
    /// Judge only this many cases (the lowest id hashes); `None`: all.
    pub cases: Option<usize>,
    /// The weighting profile (`None`: the pack's).
    pub profile: Option<String>,
}

/// What the stage reads of a variant: the chart and what it expects.
#[derive(Deserialize)]
struct VariantChart {
    case_id: String,
    variant_id: String,
    sections: Vec<Section>,
    facts: Vec<Fact>,
    expected_text: Option<String>,
    expected: Option<Expected>,
}

const VARIANT_COLUMNS: &[&str] = &[
    "case_id",
    "variant_id",
    "sections",
    "facts",
    "expected_text",
    "expected",
];

#[derive(Deserialize)]
struct CaseDiagnosis {
    case_id: String,
    reference: cfeval_schema::Reference,
}

#[derive(Serialize)]
struct Fingerprint<'a> {
    judge: &'a str,
    prompt_hash: &'a str,
    rubric_hash: &'a str,
    pack_rubric_hash: &'a str,
    profile: &'a str,
    fallback: Option<(&'a str, &'a str)>,
    cases: Option<usize>,
    only_subjects: &'a [String],
    only_families: &'a [String],
    responses: Vec<String>,
    variants: Vec<String>,
    case_shards: Vec<String>,
}

/// The pack's rubric settings: its `rubric.yaml`, or the built-in
/// oncology pack's for a treatment run.
pub fn pack_rubric(pack: Option<&Pack>, rubric: &Rubric) -> Result<PackRubric> {
    match pack {
        Some(pack) if pack.file(super::pack::FILE).is_file() => {
            let path = pack.file(super::pack::FILE);
            let text = pack.read(super::pack::FILE).map_err(Error::Pack)?;
            PackRubric::parse(&text, &path.display().to_string(), rubric).map_err(Error::Pack)
        }
        Some(pack) if pack.task == TaskKind::Diagnosis => Err(Error::Pack(format!(
            "{}: the pack has no {} (the rubric judge needs its profile and safety items)",
            pack.dir.display(),
            super::pack::FILE
        ))),
        _ => PackRubric::parse(
            cfeval_schema::pack::oncology::RUBRIC,
            "data/packs/oncology/rubric.yaml (built in)",
            rubric,
        )
        .map_err(Error::Pack),
    }
}

/// Runs the rubric judge over the run's responses (the stage's shared
/// checks done by [`crate::run`]).
pub(crate) fn run(
    config: &Config,
    rubric_run: &RubricRun,
    stores: &crate::run::Inputs,
    run_dir: &std::path::Path,
) -> Result<Report> {
    let rubric = Rubric::builtin().map_err(|problems| {
        Error::Pack(format!(
            "the built-in rubric is invalid: {}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    let settings = pack_rubric(stores.pack.as_ref(), &rubric)?;
    let profile = rubric_run
        .profile
        .clone()
        .unwrap_or_else(|| settings.profile.clone());
    if !rubric.profiles.contains_key(&profile) {
        return Err(Error::Pack(format!(
            "rubric profile `{profile}` is not one of {}",
            rubric.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let ontology = match &stores.pack {
        Some(pack) if pack.task == TaskKind::Diagnosis => Some(
            cfeval_diagnosis::ontology::Ontology::load(&pack.dir)
                .map_err(|error| Error::Pack(error.to_string()))?,
        ),
        _ => None,
    };
    let judge = &rubric_run.judge;
    let name = judge.name.clone();
    let unit = crate::run::unit(&name);
    let task = match stores.pack.as_ref().map(|pack| pack.task) {
        Some(TaskKind::Diagnosis) => "diagnosis",
        _ => "treatment",
    };
    // Pass 1: subjects, the catalog lock, the cases.
    let mut case_ids: BTreeSet<String> = BTreeSet::new();
    let (subjects, catalog) = crate::run::subjects_and_lock(
        config,
        &stores.responses,
        stores.variants_catalog.as_deref(),
        run_dir,
        &mut |row| {
            if !case_ids.contains(&row.case_id) {
                case_ids.insert(row.case_id.clone());
            }
        },
    )?;
    let chosen: Option<BTreeSet<String>> = rubric_run.cases.map(|limit| {
        let mut ordered: Vec<(u64, String)> = case_ids
            .iter()
            .map(|case| (ids::id_hash(case), case.clone()))
            .collect();
        ordered.sort();
        ordered.into_iter().take(limit).map(|(_, case)| case).collect()
    });
    let hashes = |store: &ShardStore| {
        store
            .entries()
            .iter()
            .map(|entry| entry.blake3.clone())
            .collect::<Vec<_>>()
    };
    let fingerprint = ids::fingerprint(&Fingerprint {
        judge: &name,
        prompt_hash: judge.prompt_hash(),
        rubric_hash: &rubric.hash,
        pack_rubric_hash: &settings.hash,
        profile: &profile,
        fallback: rubric_run
            .fallback
            .as_ref()
            .map(|fallback| (fallback.name.as_str(), fallback.prompt_hash())),
        cases: rubric_run.cases,
        only_subjects: &config.only_subjects,
        only_families: &config.only_families,
        responses: hashes(&stores.responses),
        variants: hashes(&stores.variants),
        case_shards: hashes(&stores.cases),
    });
    let prompt_hash = ids::content_id(
        "rubric-judge",
        &[judge.prompt_hash(), &rubric.hash, &settings.hash, &profile],
    );
    let mut judgments = ShardStore::open_table::<JudgmentRow>(run_dir)?;
    let mut report = Report {
        judge: name.clone(),
        unit: unit.clone(),
        ..Report::default()
    };
    if judgments.is_complete(&unit, &fingerprint) {
        report.skipped = true;
        return Ok(report);
    }
    let mut plans: HashMap<String, GuardPlan> = HashMap::new();
    for subject in &subjects {
        let plan = config.families.guard(
            &judge.model,
            rubric_run
                .fallback
                .as_ref()
                .map(|fallback| fallback.model.as_str()),
            subject,
        )?;
        plans.insert(subject.clone(), plan);
    }
    let mut writer = crate::run::open_unit(&mut judgments, config, &unit, &fingerprint, catalog)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let in_scope = |case: &str| chosen.as_ref().is_none_or(|chosen| chosen.contains(case));
    // The charts of the cases in scope, and each case's diagnosis (its
    // ontology id for the must-not-miss item).
    let mut charts: HashMap<String, VariantChart> = HashMap::new();
    for batch in stores.variants.read_columns::<VariantChart>(VARIANT_COLUMNS)? {
        for row in batch? {
            if in_scope(&row.case_id) {
                charts.insert(row.variant_id.clone(), row);
            }
        }
    }
    let mut diagnoses: HashMap<String, (String, String)> = HashMap::new();
    for batch in stores
        .cases
        .read_columns::<CaseDiagnosis>(&["case_id", "reference"])?
    {
        for row in batch? {
            if let (Some(written), Some(ontology)) = (row.reference.diagnosis, &ontology)
                && in_scope(&row.case_id)
            {
                let id = ontology
                    .resolve(&written)
                    .map(|diagnosis| diagnosis.id.clone())
                    .unwrap_or_default();
                diagnoses.insert(row.case_id, (written, id));
            }
        }
    }
    let context = Context {
        config,
        rubric_run,
        rubric: &rubric,
        settings: &settings,
        profile: &profile,
        task,
        name: &name,
        prompt_hash: &prompt_hash,
        charts: &charts,
        diagnoses: &diagnoses,
        plans: &plans,
    };
    // One long call per response: small chunks, so that progress shows.
    let chunk = (config.concurrency.max(1) * 2).min(config.chunk.max(1));
    let mut pending = Vec::new();
    for batch in stores
        .responses
        .read_columns::<Response>(crate::run::RESPONSE_COLUMNS)?
    {
        for row in batch? {
            if !in_scope(&row.case_id) || !config.selects(&row.subject, &row.family) {
                continue;
            }
            pending.push(row);
            if pending.len() >= chunk {
                context.score_and_write(std::mem::take(&mut pending), &runtime, &mut report, &mut writer)?;
            }
        }
    }
    context.score_and_write(pending, &runtime, &mut report, &mut writer)?;
    crate::run::commit_unit(&mut judgments, writer, &unit, &fingerprint)?;
    Ok(report)
}

struct Context<'a> {
    config: &'a Config,
    rubric_run: &'a RubricRun,
    rubric: &'a Rubric,
    settings: &'a PackRubric,
    profile: &'a str,
    task: &'a str,
    name: &'a str,
    prompt_hash: &'a str,
    charts: &'a HashMap<String, VariantChart>,
    diagnoses: &'a HashMap<String, (String, String)>,
    plans: &'a HashMap<String, GuardPlan>,
}

/// What the judge is asked for one response, the sub-dimensions N/A
/// before asking, and which judge asks.
type Plan<'a> = (ResponseInput<'a>, BTreeMap<String, String>, &'a RubricJudge);

/// A response ready for the judge.
struct Prepared {
    chart: String,
    items: Vec<super::pack::SafetyItem>,
    conditions: Vec<super::NaCondition>,
    fallback: bool,
}

impl Context<'_> {
    /// The two headline rows of a response left unscored, with why.
    fn unscored(&self, response: &Response, status: &str, error: String) -> Vec<JudgmentRow> {
        [COMPOSITE, SAFETY_FLAG]
            .into_iter()
            .map(|metric| {
                let mut row = judgment_row(&self.config.run, self.name, response, metric, self.prompt_hash);
                row.status = status.to_string();
                row.error = Some(error.clone());
                row
            })
            .collect()
    }

    fn prepare(&self, response: &Response) -> Result<Prepared, Vec<JudgmentRow>> {
        if response.status != "ok" {
            return Err(self.unscored(
                response,
                &unjudged_status(&response.status),
                format!(
                    "the response is not ok ({}): {}",
                    response.status,
                    response.error.as_deref().unwrap_or("status error")
                ),
            ));
        }
        let Some(chart) = self.charts.get(&response.variant_id) else {
            return Err(self.unscored(
                response,
                "error",
                "the response's variant is not in the variants table".into(),
            ));
        };
        let bias = SubjectName::parse(&response.subject)
            .ok()
            .and_then(|name| name.bias().map(str::to_string));
        let conditions = self.settings.conditions(&CaseContext {
            facts: &chart.facts,
            mode: &response.mode,
            bias: bias.as_deref(),
        });
        let items = self.settings.safety_items(
            chart.expected.as_ref(),
            chart.expected_text.as_deref(),
            &chart.facts,
            self.diagnoses
                .get(&response.case_id)
                .map(|(written, id)| (written.as_str(), id.as_str())),
        );
        Ok(Prepared {
            chart: cfeval_schema::render_chart(&chart.sections),
            items,
            conditions,
            fallback: self.plans.get(&response.subject) == Some(&GuardPlan::Fallback),
        })
    }

    fn score_and_write(
        &self,
        responses: Vec<Response>,
        runtime: &tokio::runtime::Runtime,
        report: &mut Report,
        writer: &mut ShardWriter,
    ) -> Result<()> {
        if responses.is_empty() {
            return Ok(());
        }
        let prepared: Vec<Result<Prepared, Vec<JudgmentRow>>> =
            responses.iter().map(|response| self.prepare(response)).collect();
        let plans: Vec<Option<Plan<'_>>> = prepared
            .iter()
            .zip(&responses)
            .map(|(prepared, response)| {
                let prepared = prepared.as_ref().ok()?;
                let (asks, removed) = self
                    .rubric
                    .plan(&prepared.conditions, &self.settings.not_called_for);
                let chosen = match (&self.rubric_run.fallback, prepared.fallback) {
                    (Some(fallback), true) => fallback,
                    _ => &self.rubric_run.judge,
                };
                Some((
                    ResponseInput {
                        task: self.task,
                        mode: &response.mode,
                        chart: &prepared.chart,
                        answer: response.text.as_deref().unwrap_or_default(),
                        asks,
                        safety: &prepared.items,
                    },
                    removed,
                    chosen,
                ))
            })
            .collect();
        let answers: Vec<Option<Result<super::judge::Scored, String>>> = runtime.block_on(async {
            let semaphore = tokio::sync::Semaphore::new(self.config.concurrency.max(1));
            let calls = plans.iter().map(|plan| {
                let semaphore = &semaphore;
                async move {
                    let (input, _, judge) = plan.as_ref()?;
                    let _permit = semaphore.acquire().await.ok()?;
                    Some(judge.score(input).await)
                }
            });
            cfeval_model::join_all(calls).await
        });
        let mut rows = Vec::new();
        for (((response, prepared), plan), answer) in responses.iter().zip(&prepared).zip(&plans).zip(answers)
        {
            let judged = match (prepared, plan, answer) {
                (Err(unscored), _, _) => unscored.clone(),
                (Ok(prepared), Some((_, removed, judge)), Some(Ok(scored))) => {
                    if prepared.fallback {
                        report.fallback_pairs += 1;
                    }
                    scored
                        .rows(self.rubric, self.profile, removed, &prepared.items)
                        .into_iter()
                        .map(|scored_row| {
                            let mut row = judgment_row(
                                &self.config.run,
                                self.name,
                                response,
                                &scored_row.metric,
                                self.prompt_hash,
                            );
                            row.score = scored_row.score;
                            row.label = scored_row.label;
                            row.rationale = Some(scored_row.rationale);
                            row.status = "ok".into();
                            row.decided_by = Some(judge.model.clone());
                            row
                        })
                        .collect()
                }
                (Ok(_), _, Some(Err(error))) => self.unscored(response, "error", error),
                (Ok(_), _, _) => self.unscored(response, "error", "the judge was not called".into()),
            };
            report.responses += 1;
            for row in &judged {
                report.errors += u64::from(row.status != "ok" && row.metric == COMPOSITE);
                if row.metric == SAFETY_FLAG
                    && let Some(label) = &row.label
                {
                    *report.labels.entry(label.clone()).or_default() += 1;
                }
            }
            rows.extend(judged);
        }
        writer.write_rows(&rows)?;
        if let Some(progress) = &self.config.progress {
            progress.add(responses.len() as u64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfeval_schema::{ResponseRow, Table, VariantRow};

    #[test]
    fn a_diagnosis_pack_without_rubric_settings_is_refused_by_name() {
        let shipped =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine");
        let dir = tempfile::tempdir().expect("tempdir");
        for entry in std::fs::read_dir(&shipped).expect("pack") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                let target = dir.path().join(entry.file_name());
                std::fs::create_dir_all(&target).expect("mkdir");
                for inner in std::fs::read_dir(entry.path()).expect("dir") {
                    let inner = inner.expect("entry");
                    std::fs::copy(inner.path(), target.join(inner.file_name())).expect("copy");
                }
            } else if entry.file_name() != "rubric.yaml" {
                std::fs::copy(entry.path(), dir.path().join(entry.file_name())).expect("copy");
            }
        }
        let rubric = Rubric::builtin().expect("rubric");
        let bare = Pack::load(dir.path()).expect("a pack without rubric.yaml loads");
        let error = pack_rubric(Some(&bare), &rubric)
            .expect_err("no rubric settings")
            .to_string();
        assert!(error.contains("has no rubric.yaml"), "{error}");
        let full = Pack::load(&shipped).expect("the shipped pack");
        assert_eq!(
            pack_rubric(Some(&full), &rubric).expect("settings").profile,
            "diagnosis"
        );
        // A run without a pack is the built-in oncology's.
        assert_eq!(
            pack_rubric(None, &rubric).expect("built in").profile,
            "management"
        );
    }

    #[test]
    fn the_columns_read_are_columns_of_the_tables() {
        for column in VARIANT_COLUMNS {
            assert!(VariantRow::schema().index_of(column).is_ok(), "{column}");
        }
        for column in crate::run::RESPONSE_COLUMNS {
            assert!(ResponseRow::schema().index_of(column).is_ok(), "{column}");
        }
    }
}
