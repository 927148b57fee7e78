//! `cfeval infer` for an HTTP subject as a process: SIGKILLed at 10 random moments and
//! resumed each time, it ends with exactly the `responses` of an uninterrupted run and
//! repeats no completed call; and no API key reaches any file of the run, its table
//! rows, its report or its logs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cfeval_model::testing::{BackgroundServer, FaultRates, ServerConfig};
use cfeval_schema::{Provenance, ResponseRow, Section, ShardStore, VariantRow, sample};

/// Calls in flight per `cfeval infer` process.
const CONCURRENCY: u64 = 4;
const KILLS: u64 = 10;

/// Sample variant `i` with a chart of its own (sample variants of one case share
/// their chart), so that every applicable variant is one distinct request.
fn variant(i: u64) -> VariantRow {
    let mut variant = sample::variant(i);
    variant.sections.push(Section {
        name: "note".into(),
        text: format!("Chart version {i}."),
        span_start: None,
        span_end: None,
    });
    variant
}

/// Writes sample variants (about 6 of 7 applicable) into a new run folder.
fn write_variants(run: &Path, count: u64) {
    let store = ShardStore::open_table::<VariantRow>(run).expect("variants store");
    let mut writer = store.writer(Provenance {
        run: "resume".into(),
        unit: "all".into(),
        fingerprint: "variants".into(),
        catalog_hash: Some("catalog".into()),
    });
    let rows: Vec<VariantRow> = (0..count).map(variant).collect();
    writer.write_rows(&rows).expect("write variants");
    writer.finish().expect("commit variants");
}

fn read_responses(run: &Path) -> Vec<ResponseRow> {
    let store = ShardStore::open_table::<ResponseRow>(run).expect("responses store");
    let mut rows = Vec::new();
    for batch in store.read_rows::<ResponseRow>().expect("read responses") {
        rows.extend(batch.expect("batch"));
    }
    rows
}

fn infer_command(run: &Path, subject: &str, url: &str, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfeval"));
    command
        .args(["infer", "--run"])
        .arg(run)
        .args(["--subject", subject, "--base-url", url])
        .args(["--concurrency", &CONCURRENCY.to_string()])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("RUST_LOG");
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

fn succeeded(output: Output, what: &str) -> Output {
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What must not change between an interrupted and an uninterrupted run: everything
/// but the per-call bookkeeping (attempts, cache hit, latency) and the request hash
/// (it covers the base URL, and each run has its own server).
fn answers(rows: &[ResponseRow]) -> BTreeMap<String, String> {
    let mut answers = BTreeMap::new();
    for row in rows {
        let answer = format!(
            "{} {} {} {} {:?} {:?} {:?} {}",
            row.subject,
            row.mode,
            row.case_id,
            row.intervention,
            row.status,
            row.text,
            row.recommendation,
            row.prompt_hash
        );
        assert!(
            answers.insert(row.variant_id.clone(), answer).is_none(),
            "variant {} answered twice",
            row.variant_id
        );
    }
    answers
}

/// Waits until `server` has received `target` requests or `child` has exited; true when
/// the child is still running.
fn wait_for_requests(server: &BackgroundServer, target: u64, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().expect("poll child").is_some() {
            return false;
        }
        if server.requests() >= target {
            return true;
        }
        assert!(Instant::now() < deadline, "cfeval infer made no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Cache keys of the successful calls in the run's journals, with how often each
/// appears.
fn journaled_ok_keys(run: &Path) -> BTreeMap<String, usize> {
    let mut keys = BTreeMap::new();
    for entry in std::fs::read_dir(run.join("journal")).expect("journal folder") {
        let path = entry.expect("journal entry").path();
        cfeval_model::Journal::replay(&path, |record| {
            if record.is_ok() {
                *keys.entry(record.key).or_insert(0) += 1;
            }
        })
        .expect("replay journal");
    }
    keys
}

/// `count` sample variants answered in `run` by `subject` against a server
/// of its own, uninterrupted: the answers and the calls it took.
fn uninterrupted(
    config: &ServerConfig,
    subject: &str,
    run: &Path,
    count: u64,
) -> (BTreeMap<String, String>, u64) {
    let server = BackgroundServer::start(config.clone()).expect("server");
    write_variants(run, count);
    succeeded(
        infer_command(run, subject, &server.openai_base_url(), &[])
            .output()
            .expect("run cfeval"),
        "clean infer",
    );
    (answers(&read_responses(run)), server.requests())
}

#[test]
fn sigkilled_infer_resumes_to_the_uninterrupted_responses() {
    let config = ServerConfig {
        latency: Duration::from_millis(30),
        ..ServerConfig::default()
    };
    let subject = "vllm/resume-model";
    let dir = tempfile::tempdir().expect("tempdir");

    // The uninterrupted run, against its own server.
    let (clean, clean_calls) = uninterrupted(&config, subject, &dir.path().join("clean"), 120);
    assert!(clean.len() > 90, "most of the 120 variants are applicable");
    assert_eq!(clean_calls, clean.len() as u64, "one call per variant");

    // The same variants, killed at 10 random moments (after a random number of new
    // requests reached the server, so that calls are in flight) and resumed each time.
    let server = BackgroundServer::start(config).expect("server");
    let url = server.openai_base_url();
    let run = dir.path().join("killed");
    write_variants(&run, 120);
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for trial in 0..KILLS {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let new_requests = 1 + (state >> 33) % 6;
        let mut child = infer_command(&run, subject, &url, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cfeval infer");
        let running = wait_for_requests(&server, server.requests() + new_requests, &mut child);
        assert!(
            running,
            "trial {trial}: cfeval infer finished before it was killed"
        );
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("reap");
        assert!(!status.success(), "trial {trial}: killed, not finished");
        // A call that completed is never made again: each successful call is
        // journaled (after its answer is in the cache) exactly once.
        let repeated: Vec<_> = journaled_ok_keys(&run)
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .collect();
        assert!(repeated.is_empty(), "trial {trial}: repeated calls {repeated:?}");
    }
    let killed_calls = server.requests();
    assert!(killed_calls < clean_calls, "the kills left work to resume");
    succeeded(
        infer_command(&run, subject, &url, &[])
            .output()
            .expect("run cfeval"),
        "resumed infer",
    );

    let resumed = answers(&read_responses(&run));
    assert_eq!(
        resumed, clean,
        "the resumed responses equal the uninterrupted run's"
    );
    let total_calls = server.requests();
    eprintln!(
        "clean run: {clean_calls} calls; killed {KILLS} times: {killed_calls} calls before the last resume, {total_calls} in all"
    );
    assert!(
        total_calls <= clean_calls + CONCURRENCY * KILLS,
        "{total_calls} calls for {clean_calls} answers: more repeated than the {} in flight at the kills",
        CONCURRENCY * KILLS
    );
    // Each answer is journaled once; an answer cached just before a kill but not yet
    // journaled is served from the cache on resume, so it never reaches the journal.
    let journaled = journaled_ok_keys(&run);
    assert!(journaled.values().all(|count| *count == 1));
    let journaled = journaled.len() as u64;
    assert!(
        (clean_calls - CONCURRENCY * KILLS..=clean_calls).contains(&journaled),
        "{journaled} journaled answers of {clean_calls}"
    );

    // The packed cache after 10 kills: one segment per process at most,
    // every torn tail cut off and every segment sealed by the next opener,
    // every answer in it once, and nothing damaged.
    let run_arg = run.display().to_string();
    let verify = crate::support::cfeval(&["cache", "verify", &run_arg]);
    assert!(
        verify.status.success(),
        "cfeval cache verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    let stats = crate::support::cfeval(&["cache", "stats", &run_arg, "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("stats JSON");
    assert_eq!(stats["keys"], clean.len(), "{stats}");
    assert_eq!(stats["file_entries"], 0, "{stats}");
    assert_eq!(
        (stats["torn_bytes"].as_u64(), stats["damaged_bytes"].as_u64()),
        (Some(0), Some(0)),
        "{stats}"
    );
    assert_eq!(stats["segments"], stats["sealed_segments"], "{stats}");
    assert!(
        stats["segments"]
            .as_u64()
            .is_some_and(|segments| segments <= KILLS + 1),
        "{stats}"
    );
    let compacted = crate::support::cfeval(&["cache", "compact", &run_arg, "--json"]);
    let compacted: serde_json::Value = serde_json::from_slice(&compacted.stdout).expect("compact JSON");
    assert_eq!(
        (compacted["keys"].as_u64(), compacted["files_after"].as_u64()),
        (Some(clean.len() as u64), Some(2)),
        "{compacted}"
    );
    // A rerun after compaction is answered from the cache alone.
    let before = server.requests();
    std::fs::remove_dir_all(run.join("responses")).expect("remove responses");
    let _ = std::fs::remove_dir_all(run.join("_units"));
    succeeded(
        infer_command(&run, subject, &url, &[])
            .output()
            .expect("run cfeval"),
        "rerun",
    );
    assert_eq!(server.requests(), before, "the rerun made calls");
    assert_eq!(answers(&read_responses(&run)), clean);
}

/// Every file under `dir`, as (path, lossy text).
fn files_under(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read file");
            out.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
}

#[test]
fn no_api_key_reaches_the_run_folder_rows_report_or_logs() {
    const GOOD: &str = "sk-secret-canary-7d41c0ffee93b2";
    const WRONG: &str = "sk-secret-canary-WRONG-5be2aa0c18";
    let server = BackgroundServer::start(ServerConfig {
        require_key: Some(GOOD.into()),
        faults: FaultRates {
            rate_limited: 0.1,
            bad_request: 0.1,
            ..FaultRates::default()
        },
        seed: 3,
        ..ServerConfig::default()
    })
    .expect("server");
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_variants(&run, 40);
    let mut seen = String::new();
    let mut keep = |output: Output| {
        seen.push_str(&String::from_utf8_lossy(&output.stdout));
        seen.push_str(&String::from_utf8_lossy(&output.stderr));
        output
    };
    // The right key, single shot and agent; then a wrong key, which the server
    // refuses with a 401 that echoes it back.
    for (subject, key, mode) in [
        ("openai/canary-model", GOOD, None),
        ("openai/canary-model", GOOD, Some("agent")),
        ("openai/refused-model", WRONG, None),
    ] {
        let mut command = infer_command(
            &run,
            subject,
            &url,
            &[("OPENAI_API_KEY", key), ("RUST_LOG", "trace")],
        );
        if let Some(mode) = mode {
            command.args(["--mode", mode]);
        }
        let output = keep(command.output().expect("run cfeval"));
        succeeded(output, subject);
    }
    assert!(
        server.requests_for_model("canary-model") > 0,
        "the good key was used"
    );
    assert!(server.unauthorized() > 0, "the wrong key was sent and refused");
    assert!(seen.contains("TRACE"), "trace logs were captured");

    let rows = read_responses(&run);
    let refused: Vec<&ResponseRow> = rows
        .iter()
        .filter(|row| row.subject == "openai/refused-model")
        .collect();
    assert!(!refused.is_empty());
    assert!(
        refused
            .iter()
            .all(|row| row.status == "error" && row.error.as_deref().is_some_and(|e| e.contains("401"))),
        "refused calls are recorded errors"
    );
    assert!(
        rows.iter()
            .any(|row| row.subject == "openai/canary-model" && row.status == "ok"),
        "answers were recorded"
    );
    let decoded = format!("{rows:?}");

    let mut files = Vec::new();
    files_under(&run, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter_map(|(path, _)| {
            Path::new(path)
                .extension()
                .map(|e| e.to_string_lossy().into_owned())
        })
        .collect();
    assert!(
        names.contains("jsonl") && names.contains("json") && names.contains("parquet"),
        "journal, cache and manifests, and shards were written: {names:?}"
    );
    for key in [GOOD, WRONG] {
        for (path, text) in &files {
            assert!(!text.contains(key), "a key is in {path}");
        }
        assert!(!decoded.contains(key), "a key is in a responses row");
        assert!(!seen.contains(key), "a key is in the report or the logs");
    }
}

/// A rerun that retries errored rows rewrites the shards that hold them
/// (a replacing shard, then the old ones retired), chunk by chunk (256
/// rows). Killed at random moments, before and after a chunk's rewrite, and
/// resumed each time, the table never shows a tuple
/// twice or loses one, and the final rows equal an uninterrupted run's.
#[test]
fn sigkilled_retries_of_errored_rows_never_lose_or_double_a_row() {
    let config = ServerConfig {
        latency: Duration::from_millis(5),
        ..ServerConfig::default()
    };
    let subject = "vllm/resume-model";
    let dir = tempfile::tempdir().expect("tempdir");
    let (clean, _) = uninterrupted(&config, subject, &dir.path().join("clean"), 640);

    // Every call of the first run is refused (a terminal 400): every row is an error.
    let server = BackgroundServer::start(config).expect("server");
    let url = server.openai_base_url();
    let run = dir.path().join("retried");
    write_variants(&run, 640);
    server.script(std::iter::repeat_n(
        cfeval_model::testing::Fault::BadRequest,
        clean.len(),
    ));
    let first = infer_command(&run, subject, &url, &[])
        .args(["--max-tries", "50"])
        .output()
        .expect("run");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let rows = read_responses(&run);
    assert_eq!(rows.len(), clean.len());
    assert!(
        rows.iter().all(|row| row.status == "error"),
        "every first answer failed"
    );

    // Reruns retry them, killed mid-way; after every kill each tuple has exactly one row.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rewritten = 0;
    for trial in 0..8 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // Anywhere in the run: in the first chunk of 256 retries, or after
        // its rewrite was committed, in the next.
        let new_requests = 40 + (state >> 33) % 100;
        let mut child = infer_command(&run, subject, &url, &[])
            .args(["--max-tries", "50"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cfeval infer");
        let killed = wait_for_requests(&server, server.requests() + new_requests, &mut child);
        if killed {
            child.kill().expect("SIGKILL");
        }
        child.wait().expect("reap");
        let rows = read_responses(&run);
        let variants: BTreeSet<&str> = rows.iter().map(|row| row.variant_id.as_str()).collect();
        assert_eq!(
            (rows.len(), variants.len()),
            (clean.len(), clean.len()),
            "trial {trial}: one row per tuple, none lost"
        );
        let ok = rows.iter().filter(|row| row.status == "ok").count();
        eprintln!(
            "trial {trial}: killed after {new_requests} new requests, {ok} of {} rows ok",
            rows.len()
        );
        rewritten += usize::from(ok > 0);
    }
    assert!(rewritten > 0, "no kill came after a chunk's rewrite");
    succeeded(
        infer_command(&run, subject, &url, &[])
            .args(["--max-tries", "50"])
            .output()
            .expect("run cfeval"),
        "resumed infer",
    );
    let rows = read_responses(&run);
    assert!(
        rows.iter().all(|row| row.status == "ok" && row.tries >= 2),
        "every row retried to ok"
    );
    assert_eq!(
        answers(&rows),
        clean,
        "the retried rows equal the uninterrupted run's"
    );
}
