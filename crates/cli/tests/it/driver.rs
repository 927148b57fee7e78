//! `cfeval run PIPELINE` end to end, as processes: SIGKILLed at 20 random
//! moments and resumed, it ends with the uninterrupted run's tables; a
//! changed judge reruns judge and aggregate with no subject call; three
//! `--shard i/3` processes on one run directory give the one-process scores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{catalog, succeeded};
use cfeval_model::testing::{BackgroundServer, ServerConfig};

/// Calls in flight for the HTTP subject.
const CONCURRENCY: u64 = 2;
const KILLS: usize = 20;
pub(crate) const SUBJECT_MODEL: &str = "driver-model";
const JUDGE_MODEL: &str = "judge-model";

/// A pipeline with two controls and one HTTP subject at `url`; `judges` is
/// the judges' TOML.
pub(crate) fn write_pipeline(dir: &Path, url: &str, judges: &str) -> PathBuf {
    let text = format!(
        r#"[run]
name = "driver"
seed = 7

[cases]
cohort = {{ cases = 10, seed = 3 }}

[catalog]
path = "{catalog}"

[[subjects]]
name = "control/reference"

[[subjects]]
name = "control/erratic"

[[subjects]]
name = "vllm/{SUBJECT_MODEL}"
base-url = "{url}"
concurrency = {CONCURRENCY}
max-tokens = 64

{judges}

[aggregate]
resamples = 300
"#,
        catalog = catalog()
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).expect("write pipeline");
    path
}

pub(crate) const RULE_JUDGE: &str = "[[judges]]\nname = \"rule\"\n";

fn run_command(cwd: &Path, pipeline: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfeval"));
    command
        .current_dir(cwd)
        .arg("run")
        .arg(pipeline)
        .args(["--run-dir", "runs/driver"])
        .args(extra)
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL");
    command
}

/// Every table's rows as sorted JSON lines, without the per-call
/// bookkeeping that differs between a clean and a resumed call (latency,
/// attempts, whether the answer came from the response cache).
/// Applicable variants (baselines included: a subject's tuples) and how
/// many distinct charts they hold (the requests a single-shot subject makes).
pub(crate) fn chart_counts(run: &Path) -> (u64, u64) {
    let store = cfeval_schema::ShardStore::open_table::<cfeval_schema::VariantRow>(run).expect("variants");
    let (mut applicable, mut charts) = (0, std::collections::HashSet::new());
    for batch in store.read_rows::<cfeval_schema::VariantRow>().expect("read") {
        for variant in batch
            .expect("batch")
            .into_iter()
            .filter(|variant| variant.applicable)
        {
            applicable += 1;
            charts.insert(
                variant
                    .sections
                    .iter()
                    .map(|section| format!("{}\n{}", section.name, section.text))
                    .collect::<Vec<_>>(),
            );
        }
    }
    (applicable, charts.len() as u64)
}

pub(crate) fn tables(run: &Path) -> BTreeMap<String, Vec<String>> {
    let mut tables = BTreeMap::new();
    for table in [
        "cases",
        "cases_quarantine",
        "variants",
        "responses",
        "judgments",
        "scores",
    ] {
        if !run.join(table).is_dir() {
            continue;
        }
        let output = Command::new(env!("CARGO_BIN_EXE_cfeval"))
            .args(["show", table, "--run"])
            .arg(run)
            .output()
            .expect("cfeval show");
        let text = succeeded(output, "cfeval show");
        let mut rows: Vec<String> = text
            .lines()
            .map(|line| {
                let mut value: serde_json::Value = serde_json::from_str(line).expect("json row");
                if let Some(object) = value.as_object_mut() {
                    for volatile in ["latency_ms", "attempts", "cached"] {
                        object.remove(volatile);
                    }
                }
                value.to_string()
            })
            .collect();
        rows.sort();
        tables.insert(table.to_string(), rows);
    }
    tables
}

pub(crate) fn assert_same_tables(
    expected: &BTreeMap<String, Vec<String>>,
    actual: &BTreeMap<String, Vec<String>>,
    what: &str,
) {
    assert_eq!(
        expected.keys().collect::<Vec<_>>(),
        actual.keys().collect::<Vec<_>>(),
        "{what}: tables"
    );
    for (table, rows) in expected {
        let other = &actual[table];
        assert_eq!(rows.len(), other.len(), "{what}: {table} row count");
        for (index, (left, right)) in rows.iter().zip(other).enumerate() {
            assert_eq!(left, right, "{what}: {table} row {index} differs");
        }
    }
}

pub(crate) fn verdict_server() -> BackgroundServer {
    let responder: cfeval_model::testing::Responder = Arc::new(
        |model: &str, _prompt: &str, _seed: Option<u64>| {
            if model == JUDGE_MODEL {
                r#"{"score": 1.0, "label": "updated_correct", "rationale": "the plan moved as expected"}"#
                    .to_string()
            } else {
                format!(
                    "Assessment for {model}: continue current therapy.\nRECOMMENDATION: continue current therapy"
                )
            }
        },
    );
    BackgroundServer::start(ServerConfig {
        latency: Duration::from_millis(25),
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("test server")
}

/// The summary line of a stage.
fn stage_line(stdout: &str, prefix: &str) -> String {
    stdout
        .lines()
        .find(|line| line.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {stdout}"))
        .to_string()
}

pub(crate) struct Clean {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) pipeline: PathBuf,
    pub(crate) tables: BTreeMap<String, Vec<String>>,
    pub(crate) calls: u64,
    pub(crate) seconds: f64,
}

pub(crate) fn clean_run(server: &BackgroundServer) -> Clean {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let before = server.requests_for_model(SUBJECT_MODEL);
    let start = Instant::now();
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &[])
            .output()
            .expect("cfeval run"),
        "clean run",
    );
    let seconds = start.elapsed().as_secs_f64();
    assert!(stdout.contains("5 aggregate"), "{stdout}");
    let calls = server.requests_for_model(SUBJECT_MODEL) - before;
    let tables = tables(&dir.path().join("runs/driver"));
    let responses = tables["responses"].len() as u64;
    let (_, distinct) = chart_counts(&dir.path().join("runs/driver"));
    assert!(
        calls > 50 && calls == distinct && calls * 3 <= responses,
        "one call per distinct chart ({distinct}): {calls} calls for {responses} responses"
    );
    assert!(!tables["scores"].is_empty());
    Clean {
        dir,
        pipeline,
        tables,
        calls,
        seconds,
    }
}

#[test]
fn sigkilled_runs_resume_to_the_uninterrupted_tables() {
    let server = verdict_server();
    let clean = clean_run(&server);

    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let before = server.requests_for_model(SUBJECT_MODEL);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut killed = 0;
    for _ in 0..KILLS {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // A random moment: after 1–8 more subject calls reached the server
        // (calls are in flight), or, once no call comes any more (judge,
        // aggregate), at a random time within the clean run's duration.
        let fraction = (state >> 11) as f64 / (1u64 << 53) as f64;
        let deadline = Duration::from_secs_f64(clean.seconds * fraction);
        let target = server.requests_for_model(SUBJECT_MODEL) + 1 + (state >> 40) % 8;
        let start = Instant::now();
        let mut child = run_command(dir.path(), &pipeline, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cfeval run");
        loop {
            if child.try_wait().expect("poll").is_some() {
                break;
            }
            if server.requests_for_model(SUBJECT_MODEL) >= target
                || (start.elapsed() >= deadline && server.requests_for_model(SUBJECT_MODEL) + 1 < target)
            {
                child.kill().expect("SIGKILL");
                killed += 1;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        child.wait().expect("reap");
    }
    assert!(
        killed >= KILLS / 2,
        "only {killed} of {KILLS} runs were still running when killed"
    );
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &[])
            .output()
            .expect("final run"),
        "final run",
    );
    assert!(
        stdout.contains("report") || stdout.contains("5 aggregate"),
        "{stdout}"
    );
    let resumed = tables(&dir.path().join("runs/driver"));
    assert_same_tables(&clean.tables, &resumed, "resumed after 20 kills");
    // Each kill loses at most the calls in flight.
    let calls = server.requests_for_model(SUBJECT_MODEL) - before;
    assert!(
        calls <= clean.calls + killed as u64 * CONCURRENCY,
        "{calls} calls against {} clean + {killed} kills × {CONCURRENCY} in flight",
        clean.calls
    );
    // Nothing left half-written: a rerun finds everything complete.
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &[]).output().expect("rerun"),
        "rerun",
    );
    assert!(stdout.contains("model calls 0"), "{stdout}");
    drop(clean.dir);
}

#[test]
fn a_changed_judge_reruns_judge_and_aggregate_only() {
    let server = verdict_server();
    let clean = clean_run(&server);
    let subject_calls = server.requests_for_model(SUBJECT_MODEL);
    let judges = format!(
        "{RULE_JUDGE}\n[[judges]]\nname = \"vllm/{JUDGE_MODEL}\"\nbase-url = \"{}\"\nfamilies = [\"D\"]\n",
        server.openai_base_url()
    );
    let pipeline = write_pipeline(clean.dir.path(), &server.openai_base_url(), &judges);
    let stdout = succeeded(
        run_command(clean.dir.path(), &pipeline, &[])
            .output()
            .expect("judge rerun"),
        "judge rerun",
    );
    assert_eq!(
        server.requests_for_model(SUBJECT_MODEL),
        subject_calls,
        "no subject call: {stdout}"
    );
    assert!(server.requests_for_model(JUDGE_MODEL) > 0, "the new judge judged");
    assert!(stdout.contains("model calls 0"), "{stdout}");
    let line = |prefix: &str| stage_line(&stdout, prefix);
    assert!(line("1 cases").contains("skipped"), "{stdout}");
    assert!(line("2 perturb").contains("skipped"), "{stdout}");
    assert!(line("4 judge rule").contains("skipped"), "{stdout}");
    assert!(
        line(&format!("4 judge vllm/{JUDGE_MODEL}")).contains("done"),
        "{stdout}"
    );
    assert!(line("5 aggregate").contains("done"), "{stdout}");
    let after = tables(&clean.dir.path().join("runs/driver"));
    assert_eq!(
        after["responses"], clean.tables["responses"],
        "responses untouched"
    );
    assert!(after["judgments"].len() > clean.tables["judgments"].len());
    assert!(after["judgments"].iter().any(|row| row.contains(JUDGE_MODEL)));
    // And `--from judge` forces judge and aggregate again, still without a
    // subject call (the judge's calls come from the cache).
    let judge_calls = server.requests_for_model(JUDGE_MODEL);
    let stdout = succeeded(
        run_command(clean.dir.path(), &pipeline, &["--from", "judge"])
            .output()
            .expect("--from judge"),
        "--from judge",
    );
    assert!(stage_line(&stdout, "4 judge rule").contains("done"), "{stdout}");
    assert!(stage_line(&stdout, "5 aggregate").contains("done"), "{stdout}");
    assert!(stage_line(&stdout, "3 infer").contains("skipped"), "{stdout}");
    assert_eq!(server.requests_for_model(SUBJECT_MODEL), subject_calls);
    assert_eq!(
        server.requests_for_model(JUDGE_MODEL),
        judge_calls,
        "judge calls served from the cache"
    );
    assert_eq!(tables(&clean.dir.path().join("runs/driver")), after);
    let _ = clean.pipeline;
}

#[test]
fn three_shard_processes_give_the_one_process_scores() {
    let server = verdict_server();
    let clean = clean_run(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let before = server.requests_for_model(SUBJECT_MODEL);
    let children: Vec<_> = (1..=3)
        .map(|index| {
            run_command(dir.path(), &pipeline, &["--shard", &format!("{index}/3")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn shard")
        })
        .collect();
    let outputs: Vec<String> = children
        .into_iter()
        .enumerate()
        .map(|(index, child)| {
            succeeded(
                child.wait_with_output().expect("shard"),
                &format!("shard {}/3", index + 1),
            )
        })
        .collect();
    let judged = outputs
        .iter()
        .filter(|stdout| stdout.contains("4 judge rule") && stdout.contains("5 aggregate"))
        .count();
    assert!(judged >= 1, "one shard judged and aggregated: {outputs:?}");
    // The slices split the tuples without overlap. A chart two
    // interventions share (B1 and B2 on a checkpoint inhibitor) may fall in
    // two slices: two processes answering it at the same moment each call
    // once (one process makes one call for it), so at most one call more
    // per such chart.
    let run_dir = dir.path().join("runs/driver");
    let (applicable, distinct) = chart_counts(&run_dir);
    let shared_charts = applicable - distinct;
    let calls = server.requests_for_model(SUBJECT_MODEL) - before;
    assert!(
        calls >= clean.calls && calls <= clean.calls + shared_charts,
        "the slices split the calls without overlap: {calls} calls, {} in one process, {shared_charts} shared charts",
        clean.calls
    );
    let sharded = tables(&run_dir);
    assert_same_tables(&clean.tables, &sharded, "three shards");
}

#[test]
fn status_says_complete_stale_and_not_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("controls.toml");
    let text = format!(
        "[run]\nname = \"status\"\n[cases]\ncohort = {{ cases = 4, seed = 2 }}\n[catalog]\npath = \"{}\"\n\
         [[subjects]]\nname = \"control/reference\"\n[[judges]]\nname = \"rule\"\n[aggregate]\nresamples = 50\n",
        catalog()
    );
    std::fs::write(&pipeline, &text).expect("write");
    succeeded(
        run_command(dir.path(), &pipeline, &[]).output().expect("run"),
        "run",
    );
    let run = dir.path().join("runs/driver");
    let status = || {
        succeeded(
            Command::new(env!("CARGO_BIN_EXE_cfeval"))
                .arg("status")
                .arg(&run)
                .output()
                .expect("status"),
            "status",
        )
    };
    let first = status();
    assert!(first.contains("units: 6 complete"), "{first}");
    // New responses after judging: the judge's unit is stale, not the scores'.
    succeeded(
        Command::new(env!("CARGO_BIN_EXE_cfeval"))
            .args(["infer", "--subject", "control/constant", "--run"])
            .arg(&run)
            .output()
            .expect("infer"),
        "infer",
    );
    let second = status();
    let judge = stage_line(&second, "judge=rule");
    assert!(judge.contains("stale: `responses` changed"), "{second}");
    assert!(stage_line(&second, "aggregate").contains("complete"), "{second}");
    // The kept pipeline now names a subject that has not run, and a changed
    // setting makes the reference's unit stale.
    let kept = run.join("pipeline.toml");
    let changed = text.replace(
        "[[subjects]]\nname = \"control/reference\"\n",
        "[infer]\nmax-tokens = 99\n[[subjects]]\nname = \"control/reference\"\n[[subjects]]\nname = \"control/erratic\"\n",
    );
    std::fs::write(&kept, changed).expect("edit kept pipeline");
    let third = status();
    assert!(
        stage_line(&third, "subject=control/reference/mode=single_shot")
            .contains("stale: the pipeline's settings"),
        "{third}"
    );
    assert!(
        stage_line(&third, "subject=control/erratic/mode=single_shot").contains("not started"),
        "{third}"
    );
    // And `cfeval run` brings everything back to complete.
    let pipeline_changed = dir.path().join("changed.toml");
    std::fs::copy(&kept, &pipeline_changed).expect("copy");
    succeeded(
        run_command(dir.path(), &pipeline_changed, &[])
            .output()
            .expect("rerun"),
        "rerun",
    );
    let fourth = status();
    assert!(
        !fourth.contains("stale") && !fourth.contains("not started"),
        "{fourth}"
    );
}

/// The numbers of the dry run's infer line for `subject`: tuples, done, new
/// calls, cached.
fn dry_run_counts(stdout: &str, subject: &str) -> (u64, u64, u64, String) {
    let line = stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(subject))
        .unwrap_or_else(|| panic!("no dry-run line for {subject} in\n{stdout}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |index: usize| -> u64 {
        fields[index]
            .parse()
            .unwrap_or_else(|_| panic!("field {index} of `{line}`"))
    };
    (number(2), number(3), number(4), fields[5].to_string())
}

/// The dry run's cost bound counts the model judges' calls: a priced judge
/// adds to the total, an unpriced one is named instead of counted as free.
#[test]
fn dry_run_cost_bound_counts_model_judge_calls() {
    let server = verdict_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let judges = format!(
        "{RULE_JUDGE}\n[[judges]]\nname = \"cascade:rule,openai/gpt-5\"\nbase-url = \"{url}\"\n\n[[judges]]\nname = \"openai/{JUDGE_MODEL}\"\nbase-url = \"{url}\"\nfamilies = [\"D\"]\n",
        url = server.openai_base_url()
    );
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), &judges);
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &["--dry-run"])
            .output()
            .expect("dry run"),
        "dry run",
    );
    let line = |name: &str| {
        stdout
            .lines()
            .find(|line| line.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no judge line for {name} in\n{stdout}"))
            .to_string()
    };
    assert!(
        line("rule ").contains("0 model calls (at most), cost ≤ $0.0000"),
        "{stdout}"
    );
    let cascade = line("cascade:rule,openai/gpt-5");
    let cost: f64 = cascade
        .split("cost ≤ $")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no cost in {cascade}"));
    assert!(cost > 0.0, "{cascade}");
    assert!(
        line(&format!("openai/{JUDGE_MODEL}"))
            .contains(&format!("unknown (no price for openai/{JUDGE_MODEL})")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("plus the unpriced judge calls of openai/{JUDGE_MODEL}")),
        "{stdout}"
    );
    // A cascade's model is resolved like any judge's: it needs only its key.
    assert!(!stdout.contains("invalid subject name"), "{stdout}");
    // The calls each unit keeps in flight: the subject's concurrency; none
    // for a control.
    let in_flight = |subject: &str| {
        stdout
            .lines()
            .find(|line| line.split_whitespace().next() == Some(subject))
            .and_then(|line| line.split_whitespace().last())
            .map(str::to_string)
    };
    assert_eq!(
        in_flight(&format!("vllm/{SUBJECT_MODEL}")),
        Some(CONCURRENCY.to_string()),
        "{stdout}"
    );
    assert_eq!(in_flight("control/reference").as_deref(), Some("-"), "{stdout}");
    assert_eq!(server.requests(), 0, "a dry run calls no model");
}

#[test]
fn dry_run_predicts_the_calls_a_run_makes_and_finds_them_cached() {
    let server = verdict_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let subject = format!("vllm/{SUBJECT_MODEL}");
    let run = dir.path().join("runs/driver");

    // Before anything ran: every tuple is a new call, and nothing is written.
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &["--dry-run"])
            .output()
            .expect("dry run"),
        "first dry run",
    );
    assert_eq!(server.requests(), 0, "a dry run calls no model");
    assert!(!run.join("responses").exists(), "a dry run writes no responses");
    let (tuples, done, calls, cached) = dry_run_counts(&stdout, &subject);
    assert_eq!((done, cached.as_str()), (0, "0"), "{stdout}");
    assert!(calls > 0 && calls <= tuples, "{stdout}");
    let (control_tuples, _, control_calls, _) = dry_run_counts(&stdout, "control/reference");
    assert_eq!(
        (control_tuples, control_calls),
        (tuples, 0),
        "controls make no calls"
    );
    assert!(
        stdout.contains(&format!("total: {calls} new subject calls")),
        "{stdout}"
    );

    // The run makes exactly the predicted calls.
    succeeded(
        run_command(dir.path(), &pipeline, &[]).output().expect("run"),
        "run",
    );
    assert_eq!(server.requests_for_model(SUBJECT_MODEL), calls);
    // One call per distinct chart: interventions that make the same edit
    // (B1 and B2 on a checkpoint inhibitor) share it.
    assert_eq!(calls, chart_counts(&run).1);

    // Done, nothing left.
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &["--dry-run"])
            .output()
            .expect("dry run"),
        "second dry run",
    );
    assert_eq!(
        dry_run_counts(&stdout, &subject),
        (tuples, tuples, 0, "0".into()),
        "{stdout}"
    );

    // Without the responses, every call is found in the response cache: the
    // dry run looks up the exact keys infer uses.
    std::fs::remove_dir_all(run.join("responses")).expect("remove responses");
    let stdout = succeeded(
        run_command(dir.path(), &pipeline, &["--dry-run"])
            .output()
            .expect("dry run"),
        "third dry run",
    );
    assert_eq!(
        dry_run_counts(&stdout, &subject),
        (tuples, 0, 0, tuples.to_string()),
        "{stdout}"
    );
    assert_eq!(
        server.requests_for_model(SUBJECT_MODEL),
        calls,
        "no call since the run"
    );
}
