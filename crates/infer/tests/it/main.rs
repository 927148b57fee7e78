//! The infer stage against controls and a real local HTTP server.

use std::path::Path;
use std::sync::Arc;

use cfeval_guidelines::Guidelines;
use cfeval_infer::{Config, Control, Mode, Slice, Subject};
use cfeval_model::testing::{BackgroundServer, FaultRates, ServerConfig};
use cfeval_model::{ModelClient, ResponseCache, SubjectSpec};
use cfeval_schema::*;

fn fact(kind: &str, name: &str, value: &str, text: &str) -> Fact {
    Fact {
        span_end: 0,
        ..Fact::spanned(kind, name, value, "chart", 0, text, "rule")
    }
}

fn variant(case: u32, intervention: &str, family: &str, her2: &str) -> VariantRow {
    let sections = vec![
        Section {
            name: "demographics".into(),
            text: format!("Patient {case}, 52-year-old woman."),
            span_start: None,
            span_end: None,
        },
        Section {
            name: "pathology".into(),
            text: "Invasive ductal carcinoma of the left breast.".into(),
            span_start: None,
            span_end: None,
        },
        Section {
            name: "biomarkers".into(),
            text: format!("ER positive, HER2 {her2}."),
            span_start: None,
            span_end: None,
        },
        Section {
            name: "staging".into(),
            text: "Stage IV with liver metastases.".into(),
            span_start: None,
            span_end: None,
        },
    ];
    let case_id = format!("case-{case}");
    VariantRow {
        run: "test".into(),
        variant_id: ids::variant_id(&case_id, intervention, "catalog-1"),
        case_id,
        intervention: intervention.into(),
        family: family.into(),
        applicable: true,
        not_applicable_reason: None,
        catalog_hash: "catalog-1".into(),
        expected_text: None,
        expected: None,
        sections,
        facts: vec![
            fact("cancer_type", "cancer_type", "breast", "breast"),
            fact("stage", "group", "IV", "Stage IV"),
            fact("biomarker", "ER", "positive", "ER positive"),
            fact("biomarker", "HER2", her2, "HER2"),
        ],
        diff: Vec::new(),
        coherence: Vec::new(),
    }
}

fn write_variants(run: &Path, cases: u32) -> u64 {
    let store = ShardStore::open_table::<VariantRow>(run).expect("open");
    let mut writer = store.writer(Provenance {
        run: "test".into(),
        unit: "all".into(),
        fingerprint: "f".into(),
        catalog_hash: Some("catalog-1".into()),
    });
    let mut rows = Vec::new();
    for case in 0..cases {
        rows.push(variant(case, "baseline", "baseline", "negative"));
        rows.push(variant(case, "A1", "A", "positive"));
        let mut not_applicable = variant(case, "D1", "D", "negative");
        not_applicable.applicable = false;
        rows.push(not_applicable);
    }
    writer.write_rows(&rows).expect("write");
    writer.finish().expect("finish");
    u64::from(cases) * 2
}

fn read_responses(run: &Path) -> Vec<ResponseRow> {
    let store = ShardStore::open_table::<ResponseRow>(run).expect("open");
    store
        .read_rows::<ResponseRow>()
        .expect("scan")
        .flat_map(|batch| batch.expect("batch"))
        .collect()
}

fn http_subject(server: &BackgroundServer, model: &str, cache: &Path) -> Arc<Subject> {
    let spec = SubjectSpec {
        base_url: Some(server.openai_base_url()),
        ..SubjectSpec::new(format!("vllm/{model}"))
    };
    let client = ModelClient::from_config(spec.resolve().expect("resolve"), None)
        .expect("client")
        .cache(ResponseCache::open(cache, false).expect("cache"))
        .build()
        .expect("build");
    Arc::new(Subject::Model {
        name: format!("vllm/{model}"),
        client,
        native_tools: true,
    })
}

/// A model subject built from `spec` (no cache).
fn model_subject(spec: SubjectSpec, native_tools: bool) -> Arc<Subject> {
    let name = spec.name.clone();
    let client = ModelClient::from_config(spec.resolve().expect("resolve"), None)
        .expect("client")
        .build()
        .expect("build");
    Arc::new(Subject::Model {
        name,
        client,
        native_tools,
    })
}

#[test]
fn controls_answer_every_applicable_variant_and_are_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 5);
    let guidelines = Guidelines::builtin().expect("guidelines");
    for name in [
        "control/reference",
        "control/constant",
        "control/erratic",
        "control/blind-biomarker",
    ] {
        let subject = Arc::new(Subject::Control(
            Control::parse(name, guidelines.clone()).expect("control"),
        ));
        let report = cfeval_infer::run(&Config::default(), subject, dir.path()).expect("run");
        assert_eq!(
            report.tuples, tuples,
            "{name}: the not-applicable D1 rows are not answered"
        );
        assert_eq!(report.errors, 0);
    }
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples * 4);
    assert!(
        rows.iter()
            .all(|row| row.is_control && row.status == "ok" && row.recommendation.is_some())
    );
    let plan = |subject: &str, intervention: &str| {
        rows.iter()
            .find(|row| row.subject == subject && row.case_id == "case-0" && row.intervention == intervention)
            .and_then(|row| row.recommendation.clone())
            .expect("row")
    };
    assert_ne!(
        plan("control/reference", "baseline"),
        plan("control/reference", "A1"),
        "HER2 flip moves the reference"
    );
    assert_eq!(
        plan("control/constant", "baseline"),
        plan("control/constant", "A1"),
        "the constant never moves"
    );
    assert_eq!(
        plan("control/blind-biomarker", "baseline"),
        plan("control/blind-biomarker", "A1")
    );
}

#[test]
fn http_subject_single_shot_resumes_and_caches() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 6);
    let cache = dir.path().join("cache");
    let config = Config {
        chunk: 4,
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, http_subject(&server, "m1", &cache), dir.path()).expect("run");
    assert_eq!((report.answered, report.errors), (tuples, 0));
    assert_eq!(server.requests(), tuples);
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples);
    assert!(rows[0].text.as_deref().expect("text").starts_with("[m1]"));
    assert!(!rows[0].is_control);
    // Rerun: everything is already answered; no request.
    let report = cfeval_infer::run(&config, http_subject(&server, "m1", &cache), dir.path()).expect("rerun");
    assert_eq!((report.skipped, report.answered), (tuples, 0));
    assert_eq!(server.requests(), tuples);
    // A fresh run folder with the same cache: answered from the cache, still no request.
    let fresh = tempfile::tempdir().expect("tempdir");
    write_variants(fresh.path(), 6);
    let report =
        cfeval_infer::run(&config, http_subject(&server, "m1", &cache), fresh.path()).expect("cached run");
    assert_eq!(report.cached, tuples);
    assert_eq!(server.requests(), tuples);
    // Another model never hits the first model's cache.
    cfeval_infer::run(&config, http_subject(&server, "m2", &cache), fresh.path()).expect("m2");
    assert_eq!(server.requests_for_model("m2"), tuples);
}

/// Commits by size or time: with `commit_every` zero every chunk is a
/// shard; with a long one, rows wait (up to 16 chunks) for one commit; the
/// rows are the same either way.
#[test]
fn rows_are_committed_by_chunk_or_by_time() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let shards = |commit_every: std::time::Duration| {
        let dir = tempfile::tempdir().expect("tempdir");
        let tuples = write_variants(dir.path(), 20);
        // One call at a time, so rows arrive one by one.
        let config = Config {
            chunk: 2,
            commit_every,
            concurrency: 1,
            ..Config::default()
        };
        let subject = http_subject(&server, "m1", &dir.path().join("cache"));
        cfeval_infer::run(&config, subject, dir.path()).expect("run");
        let rows = read_responses(dir.path());
        assert_eq!(rows.len() as u64, tuples);
        let store = ShardStore::open_table::<ResponseRow>(dir.path()).expect("open");
        (tuples, store.entries().len(), rows)
    };
    let (tuples, every_chunk, rows) = shards(std::time::Duration::ZERO);
    assert_eq!(every_chunk as u64, tuples.div_ceil(2));
    let (_, by_time, timed_rows) = shards(std::time::Duration::from_secs(3600));
    // 16 chunks of 2 rows force a commit; the rest is the last shard.
    assert!(tuples > 32, "{tuples} tuples");
    assert_eq!(by_time as u64, tuples.div_ceil(32));
    let texts = |rows: &[ResponseRow]| rows.iter().map(|row| row.text.clone()).collect::<Vec<_>>();
    assert_eq!(texts(&rows), texts(&timed_rows));
}

#[test]
fn agent_mode_records_the_trace_against_native_tools() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 2);
    let config = Config {
        mode: Mode::Agent,
        ..Config::default()
    };
    let report = cfeval_infer::run(
        &config,
        http_subject(&server, "agent", &dir.path().join("cache")),
        dir.path(),
    )
    .expect("run");
    assert_eq!(report.errors, 0);
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples);
    for row in rows {
        assert_eq!(row.mode, "agent");
        assert_eq!(
            row.trace.first().and_then(|step| step.tool.as_deref()),
            Some("list_chart_sections")
        );
        assert_eq!(row.trace.last().map(|step| step.kind.as_str()), Some("final"));
        assert!(row.text.is_some());
    }
}

#[test]
fn agent_mode_text_protocol_reads_the_variants_chart_and_counts_bad_calls() {
    // A model without native tools, driven by the text protocol: list the sections,
    // ask for one that does not exist (an error fed back and counted), read the
    // biomarkers, then answer from what the tool returned.
    let responder: cfeval_model::testing::Responder =
        Arc::new(|_model: &str, last: &str, _seed: Option<u64>| {
            let Some(result) = last.strip_prefix("Tool result:\n") else {
                return "I will look at the chart first.\nACTION: list_chart_sections".to_string();
            };
            if result.starts_with("error:") {
                "ACTION: read_chart_section Biomarkers".to_string()
            } else if result.contains("HER2") {
                let plan = if result.contains("HER2 positive") {
                    "trastuzumab"
                } else {
                    "endocrine therapy"
                };
                format!("Reasoning: the chart says {result}\nRecommendation: {plan}")
            } else {
                "ACTION: read_chart_section radiology".to_string()
            }
        });
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 3);
    let spec = SubjectSpec {
        base_url: Some(server.openai_base_url()),
        ..SubjectSpec::new("vllm/text-agent")
    };
    let subject = model_subject(spec, false);
    let config = Config {
        mode: Mode::Agent,
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, subject, dir.path()).expect("run");
    assert_eq!((report.answered, report.errors), (tuples, 0));
    // Four model calls per variant, none with native tools offered.
    assert_eq!(server.requests(), tuples * 4);
    let body = server.last_body().expect("a request");
    assert!(body.get("tools").is_none(), "no native tools: {body}");
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples);
    for row in rows {
        let tools: Vec<(&str, Option<&str>)> = row
            .trace
            .iter()
            .map(|step| (step.kind.as_str(), step.tool.as_deref()))
            .collect();
        assert_eq!(
            tools,
            [
                ("tool_call", Some("list_chart_sections")),
                ("error", Some("read_chart_section")),
                ("tool_call", Some("read_chart_section")),
                ("final", None),
            ],
            "{:?}",
            row.trace
        );
        assert!(
            row.trace[1]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("radiology"))
        );
        assert_eq!(row.trace[2].section.as_deref(), Some("biomarkers"));
        assert!(row.trace[2].result_hash.is_some());
        assert_eq!(row.tool_errors, 1);
        assert_eq!(row.sections_read, ["biomarkers"]);
        // The tool served this variant's chart: the HER2 flip reaches the answer.
        let expected = if row.intervention == "A1" {
            "trastuzumab"
        } else {
            "endocrine therapy"
        };
        assert_eq!(
            row.recommendation.as_deref(),
            Some(expected),
            "{}",
            row.intervention
        );
    }
}

#[test]
fn faults_end_in_a_response_or_a_recorded_error_never_lost_or_duplicated() {
    let server = BackgroundServer::start(ServerConfig {
        faults: FaultRates {
            bad_request: 0.1,
            ..FaultRates::mixed(0.2)
        },
        hang_for: std::time::Duration::from_millis(300),
        seed: 11,
        ..ServerConfig::default()
    })
    .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 20);
    let spec = SubjectSpec {
        base_url: Some(server.openai_base_url()),
        limits: cfeval_model::Limits {
            attempt_timeout_secs: 0.2,
            max_attempts: 3,
            backoff_base_secs: 0.01,
            backoff_max_secs: 0.05,
            ..cfeval_model::Limits::default()
        },
        ..SubjectSpec::new("vllm/faulty")
    };
    let subject = model_subject(spec, true);
    let report = cfeval_infer::run(
        &Config {
            chunk: 8,
            ..Config::default()
        },
        subject,
        dir.path(),
    )
    .expect("run");
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples, "every tuple ends with exactly one row");
    let mut ids: Vec<&str> = rows.iter().map(|row| row.variant_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as u64, tuples, "no duplicates");
    assert!(report.errors > 0, "terminal 400s are recorded as errors");
    assert!(rows.iter().all(|row| (row.status == "ok") == row.error.is_none()));
}

#[test]
fn slices_split_the_work_between_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 10);
    let guidelines = Guidelines::builtin().expect("guidelines");
    let mut total = 0;
    for index in 1..=3 {
        let subject = Arc::new(Subject::Control(
            Control::parse("control/reference", guidelines.clone()).expect("control"),
        ));
        let config = Config {
            slice: Slice { index, count: 3 },
            ..Config::default()
        };
        total += cfeval_infer::run(&config, subject, dir.path())
            .expect("run")
            .answered;
    }
    assert_eq!(total, tuples);
    assert_eq!(read_responses(dir.path()).len() as u64, tuples);
}

#[test]
fn mixed_catalogs_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_variants(dir.path(), 2);
    let store = ShardStore::open_table::<VariantRow>(dir.path()).expect("open");
    let mut writer = store.writer(Provenance::default());
    let mut other = variant(9, "A1", "A", "positive");
    other.catalog_hash = "catalog-2".into();
    writer.write_rows(&[other]).expect("write");
    writer.finish().expect("finish");
    let subject = Arc::new(Subject::Control(
        Control::parse("control/reference", Guidelines::builtin().expect("g")).expect("c"),
    ));
    let error = cfeval_infer::run(&Config::default(), subject.clone(), dir.path()).expect_err("mixed");
    assert!(error.to_string().contains("--allow-mixed-catalogs"), "{error}");
    cfeval_infer::run(
        &Config {
            allow_mixed_catalogs: true,
            ..Config::default()
        },
        subject,
        dir.path(),
    )
    .expect("allowed");
}

/// Fast retries and short hangs against the test server.
fn fast_spec(server: &BackgroundServer, name: &str) -> SubjectSpec {
    SubjectSpec {
        base_url: Some(server.openai_base_url()),
        limits: cfeval_model::Limits {
            attempt_timeout_secs: 0.2,
            max_attempts: 2,
            backoff_base_secs: 0.0,
            backoff_max_secs: 0.0,
            ..cfeval_model::Limits::default()
        },
        ..SubjectSpec::new(name)
    }
}

#[test]
fn an_errored_tuple_is_retried_on_rerun_into_one_ok_row() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 3);
    // The first run: the first tuple's two attempts are unusable (empty,
    // then cut off), a later one's call is refused with a terminal 400.
    server.script([
        cfeval_model::testing::Fault::EmptyReply,
        cfeval_model::testing::Fault::Length,
    ]);
    let config = Config {
        chunk: 2,
        concurrency: 1,
        ..Config::default()
    };
    let subject = model_subject(fast_spec(&server, "vllm/flaky"), true);
    let first = cfeval_infer::run(&config, subject.clone(), dir.path()).expect("run");
    assert_eq!(first.errors, 1);
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples);
    let bad: Vec<&ResponseRow> = rows.iter().filter(|row| row.status != "ok").collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].status, "truncated");
    assert_eq!((bad[0].attempts, bad[0].tries), (2, 1));
    assert!(bad[0].recommendation.is_none());
    assert_eq!(bad[0].finish_reason.as_deref(), Some("length"));
    assert!(
        bad[0]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("after 2 attempts")
    );
    let bad_id = bad[0].variant_id.clone();
    // The rerun against a working server: one ok row for that tuple, tried
    // twice; every other row is copied forward untouched.
    let again = cfeval_infer::run(&config, subject.clone(), dir.path()).expect("rerun");
    assert_eq!((again.retried, again.errors, again.answered), (1, 0, 1));
    let after = read_responses(dir.path());
    assert_eq!(after.len() as u64, tuples, "one row per tuple");
    let retried: Vec<&ResponseRow> = after.iter().filter(|row| row.variant_id == bad_id).collect();
    assert_eq!(retried.len(), 1);
    assert_eq!((retried[0].status.as_str(), retried[0].tries), ("ok", 2));
    assert_eq!(retried[0].finish_reason.as_deref(), Some("stop"));
    for row in rows.iter().filter(|row| row.variant_id != bad_id) {
        assert!(after.contains(row), "ok rows are copied forward as they were");
    }
    let store = ShardStore::open_table::<ResponseRow>(dir.path()).expect("open");
    let unit = cfeval_infer::unit("vllm/flaky", Mode::SingleShot, Slice::ALL);
    let record = store.unit(&unit).expect("complete again");
    assert_eq!(record.rows, tuples);
    // Nothing left to retry: a third run makes no call.
    let requests = server.requests();
    let third = cfeval_infer::run(&config, subject, dir.path()).expect("third");
    assert_eq!((third.answered, third.skipped), (0, tuples));
    assert_eq!(server.requests(), requests);
}

#[test]
fn a_tuple_is_left_as_it_is_after_max_tries() {
    let server = BackgroundServer::start(ServerConfig {
        faults: FaultRates {
            refusal: 1.0,
            ..FaultRates::default()
        },
        ..ServerConfig::default()
    })
    .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 1);
    let config = Config {
        max_tries: 2,
        ..Config::default()
    };
    let subject = model_subject(fast_spec(&server, "vllm/refuser"), false);
    for expected_tries in [1, 2, 2] {
        let report = cfeval_infer::run(&config, subject.clone(), dir.path()).expect("run");
        let rows = read_responses(dir.path());
        assert_eq!(rows.len() as u64, tuples);
        assert!(
            rows.iter()
                .all(|row| row.status == "refused" && row.tries == expected_tries)
        );
        assert!(
            rows.iter()
                .all(|row| row.text.as_deref() == Some(cfeval_model::testing::REFUSAL_TEXT))
        );
        if expected_tries == 2 && report.answered == 0 {
            assert_eq!(report.gave_up, tuples);
        }
    }
}

/// A model whose answer task panics on one patient's charts (a bug in a
/// backend, a provider SDK, anything) and answers the others.
struct PanickingModel {
    identity: cfeval_model::BackendIdentity,
}

impl cfeval_model::ChatBackend for PanickingModel {
    fn identity(&self) -> &cfeval_model::BackendIdentity {
        &self.identity
    }

    fn send<'a>(
        &'a self,
        request: &'a cfeval_model::ChatRequest,
    ) -> cfeval_model::BoxFuture<'a, cfeval_model::Result<cfeval_model::ChatResponse>> {
        let prompt = serde_json::to_string(&request.messages).unwrap_or_default();
        Box::pin(async move {
            assert!(!prompt.contains("Patient 2,"), "the backend crashed on patient 2");
            Ok(cfeval_model::ChatResponse {
                text: Some("Recommendation: continue the current therapy.".into()),
                tool_calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: cfeval_model::Usage::default(),
                model: None,
                raw: serde_json::Value::Null,
            })
        })
    }
}

/// A task that fails (here: panics) is an error row of its tuple, never a
/// missing one; every other tuple is answered, in tuple order, and a rerun
/// tries the failed ones again.
#[test]
fn a_failed_answer_task_is_an_error_row_never_a_missing_tuple() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 5);
    let backend = Arc::new(PanickingModel {
        identity: cfeval_model::BackendIdentity {
            backend: "fake".into(),
            subject: "fake/panicky".into(),
            model: "panicky".into(),
            base_url: String::new(),
        },
    });
    let subject = Arc::new(Subject::Model {
        name: "fake/panicky".into(),
        client: ModelClient::builder(backend).build().expect("client"),
        native_tools: true,
    });
    let config = Config {
        concurrency: 3,
        chunk: 2,
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, subject, dir.path()).expect("run");
    let rows = read_responses(dir.path());
    assert_eq!(rows.len() as u64, tuples);
    assert_eq!(report.answered, tuples);
    let failed: Vec<&ResponseRow> = rows.iter().filter(|row| row.status != "ok").collect();
    assert!(!failed.is_empty());
    for row in &failed {
        assert_eq!(row.case_id, "case-2", "{row:?}");
        assert_eq!(row.status, "error");
        assert!(
            row.error
                .as_deref()
                .is_some_and(|error| error.contains("task failed")),
            "{:?}",
            row.error
        );
    }
    assert_eq!(report.errors, failed.len() as u64);
    assert!(
        rows.iter()
            .filter(|row| row.case_id != "case-2")
            .all(|row| row.status == "ok")
    );
    // Rows are committed in tuple order, whatever order the calls ended in.
    let mut ids: Vec<(String, String)> = rows
        .iter()
        .map(|row| (row.case_id.clone(), row.intervention.clone()))
        .collect();
    let written = ids.clone();
    ids.dedup();
    assert_eq!(ids, written, "one row per tuple");
}

/// `concurrency` calls are in flight at once (the window keeps it full), not
/// the client's default cap of 32.
#[test]
fn the_window_keeps_concurrency_calls_in_flight() {
    let server = BackgroundServer::start(ServerConfig {
        latency: std::time::Duration::from_millis(150),
        ..ServerConfig::default()
    })
    .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuples = write_variants(dir.path(), 40);
    let spec = SubjectSpec {
        base_url: Some(server.openai_base_url()),
        limits: cfeval_model::Limits {
            max_concurrency: 64,
            ..cfeval_model::Limits::default()
        },
        ..SubjectSpec::new("vllm/wide-model")
    };
    let config = Config {
        concurrency: 64,
        chunk: 16,
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, model_subject(spec, true), dir.path()).expect("run");
    assert_eq!(report.errors, 0);
    assert_eq!(read_responses(dir.path()).len() as u64, tuples);
    // Chunks of 16 with a barrier would never hold more than 16 at once.
    assert!(
        server.max_in_flight() > 40,
        "{} calls in flight at most, for {tuples} tuples at concurrency 64",
        server.max_in_flight()
    );
}
