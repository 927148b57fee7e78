//! A 1M-tuple sweep through `cfeval run` against the zero-latency test server:
//! tuples/s end to end and the driver's resident set over time.
//!
//! The bench starts the OpenAI-compatible test server
//! (`cfeval_model::testing::BackgroundServer`, no latency, a short fixed
//! recommendation per call) in this process, writes a pipeline file — a
//! synthetic cohort, four HTTP subjects `vllm/bench-1..4` on the server plus
//! `control/reference`, the rule judge, `resamples = 1000` — sized so that
//! subjects × applicable variant rows ≈ `CFEVAL_SWEEP_TUPLES` (default
//! 1,000,000), and runs the release `cfeval run` on it as a child process.
//! Every 200 ms it reads the child's `VmRSS` and `VmHWM` from
//! `/proc/<pid>/status`. Then it reruns the whole sweep in a fresh run
//! directory that holds only the first run's response cache (every call
//! answered from it). At the end it prints the stage summary, the RSS
//! timeline, the cache's files and bytes, the cached rerun's times and one
//! JSON line of results.
//!
//! `bash benches/sweep.sh` (builds the release `cfeval` first), or
//! `cargo build --release -p cfeval-cli && cargo bench -p cfeval-cli --bench sweep`.
//!
//! Environment: `CFEVAL_SWEEP_TUPLES` (default 1000000), `CFEVAL_SWEEP_DIR`
//! (parent of the run directory; default the system temp dir — the run
//! directory is deleted at the end unless `CFEVAL_SWEEP_KEEP=1`),
//! `CFEVAL_SWEEP_CONCURRENCY` (calls in flight per subject, default 64),
//! `CFEVAL_SWEEP_LATENCY_MS` (the test server's latency per call, default 0),
//! `CFEVAL_SWEEP_RESAMPLES` (default 1000), `CFEVAL_CACHE_LAYOUT` (`packed`,
//! the default, or `files`: the response cache layout the child writes),
//! `CFEVAL_SWEEP_COLD=1` (drop the page cache before the rerun; root only),
//! `CFEVAL_SWEEP_RSS_CSV` (a file
//! to write every RSS sample to), `CFEVAL_BIN` (the `cfeval`
//! binary; default `$CARGO_TARGET_DIR/release/cfeval` or the workspace's
//! `target/release/cfeval`).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};

const HTTP_SUBJECTS: usize = 4;
const SAMPLE_EVERY: Duration = Duration::from_millis(200);
const ANSWER: &str = "Assessment: stage-appropriate disease, fit for treatment; the tumor board \
                      reviewed imaging and pathology.\nRECOMMENDATION: continue current therapy";

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cfeval_binary() -> PathBuf {
    let binary = std::env::var_os("CFEVAL_BIN").map_or_else(
        || {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| workspace().join("target"), PathBuf::from);
            target.join("release").join("cfeval")
        },
        PathBuf::from,
    );
    assert!(
        binary.is_file(),
        "{} not found: build it first (`cargo build --release --locked -p cfeval-cli`, \
         or run `bash benches/sweep.sh`)",
        binary.display()
    );
    binary
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`).
fn status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn pipeline_text(
    name: &str,
    cases: u64,
    catalog: &Path,
    url: &str,
    concurrency: u64,
    resamples: u64,
) -> String {
    let mut text = format!(
        "[run]\nname = \"{name}\"\nseed = 1\n\n[cases]\ncohort = {{ cases = {cases}, seed = 1 }}\n\n\
         [catalog]\npath = \"{}\"\n\n[infer]\nmax-tokens = 64\nconcurrency = {concurrency}\n\n\
         [[subjects]]\nname = \"control/reference\"\n",
        catalog.display()
    );
    for index in 1..=HTTP_SUBJECTS {
        text.push_str(&format!(
            "\n[[subjects]]\nname = \"vllm/bench-{index}\"\nbase-url = \"{url}\"\nconcurrency = {concurrency}\n"
        ));
    }
    text.push_str(&format!(
        "\n[[judges]]\nname = \"rule\"\n\n[aggregate]\nresamples = {resamples}\n"
    ));
    text
}

fn cfeval(binary: &Path, dir: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .current_dir(dir)
        .env("CFEVAL_PROGRESS", "plain")
        .env("CFEVAL_PROGRESS_SECS", "5")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL");
    command
}

/// Applicable variant rows per case of the default cohort, from the plan of a
/// small cohort (`cfeval run --dry-run`, one control subject).
fn tuples_per_case(binary: &Path, dir: &Path, catalog: &Path) -> f64 {
    const CASES: u64 = 400;
    let text = format!(
        "[run]\nname = \"calibrate\"\nseed = 1\n\n[cases]\ncohort = {{ cases = {CASES}, seed = 1 }}\n\n\
         [catalog]\npath = \"{}\"\n\n[[subjects]]\nname = \"control/reference\"\n\n\
         [[judges]]\nname = \"rule\"\n",
        catalog.display()
    );
    let path = dir.join("calibrate.toml");
    std::fs::write(&path, text).expect("write the calibration pipeline");
    let output = cfeval(binary, dir)
        .arg("run")
        .arg(&path)
        .args(["--run-dir", "calibrate", "--dry-run"])
        .output()
        .expect("cfeval run --dry-run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "dry run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tuples: u64 = stdout
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "control/reference").then(|| words.nth(1)?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no control/reference line in the plan:\n{stdout}"));
    let _ = std::fs::remove_dir_all(dir.join("calibrate"));
    tuples as f64 / CASES as f64
}

/// One RSS sample of the child.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    rss_kib: u64,
    hwm_kib: u64,
}

/// A stderr line of the child and when it came.
struct Line {
    secs: f64,
    text: String,
}

/// A finished bar line: `LABEL: done/total done in S s (R/s)`.
struct Finished {
    label: String,
    items: u64,
    secs: f64,
    end: f64,
}

fn finished(line: &Line) -> Option<Finished> {
    let (head, rest) = line.text.split_once(" done in ")?;
    let (label, counts) = head.rsplit_once(": ")?;
    let items = counts.split('/').next()?.trim().parse().ok()?;
    let secs: f64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(Finished {
        label: label.to_string(),
        items,
        secs,
        end: line.secs,
    })
}

/// The number after `word` in `text` (`tuples 1000` → 1000).
fn number_after(text: &str, word: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    while let Some(current) = words.next() {
        if current == word {
            return words.next()?.trim_end_matches(',').parse().ok();
        }
    }
    None
}

/// Bytes, bytes allocated on disk, and files under `path`.
fn disk_usage(path: &Path) -> (u64, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut bytes = 0;
    let mut allocated = 0;
    let mut files = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                bytes += meta.len();
                allocated += meta.blocks() * 512;
                files += 1;
            }
        }
    }
    (bytes, allocated, files)
}

/// What one `cfeval run` of the sweep did.
struct Ran {
    wall: f64,
    summary: String,
    lines: Vec<Line>,
    samples: Vec<Sample>,
    pid: u32,
}

/// Runs `cfeval run PIPELINE --run-dir run` in `dir`, sampling its RSS;
/// panics if it fails.
fn run_child(binary: &Path, dir: &Path, pipeline: &Path) -> Ran {
    let start = Instant::now();
    let mut child = cfeval(binary, dir)
        .arg("run")
        .arg(pipeline)
        .args(["--run-dir", "run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cfeval run");
    let pid = child.id();
    let mut stdout = child.stdout.take().expect("child stdout");
    let stderr = child.stderr.take().expect("child stderr");
    let stdout_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(text) = line else { break };
            eprintln!("  [{:7.1} s] {text}", start.elapsed().as_secs_f64());
            lines.push(Line {
                secs: start.elapsed().as_secs_f64(),
                text,
            });
        }
        lines
    });
    let status_path = format!("/proc/{pid}/status");
    let mut samples: Vec<Sample> = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let (Some(rss_kib), Some(hwm_kib)) = (status_kib(&text, "VmRSS"), status_kib(&text, "VmHWM"))
        {
            samples.push(Sample {
                secs: start.elapsed().as_secs_f64(),
                rss_kib,
                hwm_kib,
            });
        }
        std::thread::sleep(SAMPLE_EVERY);
    };
    let wall = start.elapsed().as_secs_f64();
    let summary = stdout_reader.join().expect("stdout reader");
    let lines = stderr_reader.join().expect("stderr reader");
    assert!(
        status.success(),
        "cfeval run failed ({status}):\n{summary}\n{}",
        lines
            .iter()
            .map(|line| line.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ran {
        wall,
        summary,
        lines,
        samples,
        pid,
    }
}

/// The span of the infer stage's bars: (begin, end) in seconds of the run.
fn infer_span_of(lines: &[Line]) -> Option<(f64, f64)> {
    let bars: Vec<Finished> = lines
        .iter()
        .filter_map(finished)
        .filter(|bar| bar.label.starts_with("infer "))
        .collect();
    let begin = bars.iter().map(|bar| bar.end - bar.secs).reduce(f64::min)?;
    let end = bars.iter().map(|bar| bar.end).reduce(f64::max)?;
    Some((begin, end))
}

fn main() {
    let target = env_number("CFEVAL_SWEEP_TUPLES", 1_000_000);
    let concurrency = env_number("CFEVAL_SWEEP_CONCURRENCY", 64);
    let resamples = env_number("CFEVAL_SWEEP_RESAMPLES", 1000);
    let keep = std::env::var("CFEVAL_SWEEP_KEEP").is_ok_and(|value| value == "1");
    let binary = cfeval_binary();
    let catalog = workspace()
        .join("data/packs/oncology/catalog.yaml")
        .canonicalize()
        .expect("the catalog data/packs/oncology/catalog.yaml");
    let parent = std::env::var_os("CFEVAL_SWEEP_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    std::fs::create_dir_all(&parent).expect("create CFEVAL_SWEEP_DIR");
    let dir = tempfile::Builder::new()
        .prefix("cfeval-sweep-")
        .tempdir_in(&parent)
        .expect("temp dir");

    let responder: Responder = Arc::new(|_model: &str, _prompt: &str, _seed: Option<u64>| ANSWER.to_string());
    // A latency per call shows whether infer keeps `concurrency` calls in
    // flight (ideal: concurrency / latency calls per second).
    let latency = std::time::Duration::from_millis(env_number("CFEVAL_SWEEP_LATENCY_MS", 0));
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        latency,
        ..ServerConfig::default()
    })
    .expect("test server");

    let per_case = tuples_per_case(&binary, dir.path(), &catalog);
    let subjects = HTTP_SUBJECTS as u64 + 1;
    let cases = ((target as f64 / (per_case * subjects as f64)).round() as u64).max(1);
    eprintln!(
        "sweep: {per_case:.2} applicable variant rows per case; {cases} cases × {subjects} subjects \
         ≈ {:.0} tuples; run dir {}",
        per_case * (cases * subjects) as f64,
        dir.path().display()
    );
    let pipeline = dir.path().join("sweep.toml");
    std::fs::write(
        &pipeline,
        pipeline_text(
            "sweep",
            cases,
            &catalog,
            &server.openai_base_url(),
            concurrency,
            resamples,
        ),
    )
    .expect("write the pipeline");

    let requests_before = server.requests();
    let Ran {
        wall,
        summary,
        lines,
        samples,
        pid,
    } = run_child(&binary, dir.path(), &pipeline);
    let calls = server.requests() - requests_before;
    let per_model: Vec<(String, u64)> = (1..=HTTP_SUBJECTS)
        .map(|index| {
            let model = format!("bench-{index}");
            let count = server.requests_for_model(&model);
            (model, count)
        })
        .collect();
    println!("{summary}");

    let stats_line = summary
        .lines()
        .find(|line| line.starts_with("cases "))
        .unwrap_or_default();
    let tuples = number_after(stats_line, "tuples").expect("tuples in the summary");
    let model_calls = number_after(stats_line, "calls").unwrap_or(0);
    let errors = number_after(stats_line, "errors").unwrap_or(u64::MAX);
    let variant_rows = number_after(stats_line, "rows").unwrap_or(0);

    // Stage times from the bars' final lines (their end is when the line came).
    let bars: Vec<Finished> = lines.iter().filter_map(finished).collect();
    let infer: Vec<&Finished> = bars
        .iter()
        .filter(|bar| bar.label.starts_with("infer "))
        .collect();
    let judge: Vec<&Finished> = bars
        .iter()
        .filter(|bar| bar.label.starts_with("judge "))
        .collect();
    let span = |bars: &[&Finished]| -> Option<(f64, f64)> {
        let begin = bars.iter().map(|bar| bar.end - bar.secs).reduce(f64::min)?;
        let end = bars.iter().map(|bar| bar.end).reduce(f64::max)?;
        Some((begin, end))
    };
    let infer_span = span(&infer);
    let judge_span = span(&judge);
    for bar in &bars {
        eprintln!(
            "  {:<40} {:>9} items in {:7.1} s ({:9.0}/s), ended at {:7.1} s",
            bar.label,
            bar.items,
            bar.secs,
            bar.items as f64 / bar.secs.max(1e-9),
            bar.end
        );
    }

    // RSS over time.
    let rss_at = |fraction: f64| -> u64 {
        let at = wall * fraction;
        samples
            .iter()
            .take_while(|sample| sample.secs <= at)
            .last()
            .or_else(|| samples.first())
            .map_or(0, |sample| sample.rss_kib)
    };
    let fractions = [0.1, 0.25, 0.5, 0.75, 1.0];
    let timeline: Vec<(f64, u64)> = fractions.iter().map(|&f| (f, rss_at(f))).collect();
    let peak_hwm = samples.iter().map(|sample| sample.hwm_kib).max().unwrap_or(0);
    let peak_rss = samples.iter().map(|sample| sample.rss_kib).max().unwrap_or(0);
    let peak_in = |span: Option<(f64, f64)>| -> Option<u64> {
        let (begin, end) = span?;
        samples
            .iter()
            .filter(|sample| sample.secs >= begin && sample.secs <= end)
            .map(|sample| sample.rss_kib)
            .max()
    };
    // Flat: the infer stage's RSS in its last quarter against its second quarter.
    let infer_drift = infer_span.and_then(|(begin, end)| {
        let quarter = (end - begin) / 4.0;
        let max_between = |from: f64, to: f64| {
            samples
                .iter()
                .filter(|sample| sample.secs >= from && sample.secs <= to)
                .map(|sample| sample.rss_kib)
                .max()
        };
        let early = max_between(begin + quarter, begin + 2.0 * quarter)?;
        let late = max_between(end - quarter, end)?;
        Some(late as i64 - early as i64)
    });
    eprintln!("\nRSS of `cfeval run` (pid {pid}), {} samples:", samples.len());
    for (fraction, kib) in &timeline {
        eprintln!(
            "  {:>4.0}% of wall ({:7.1} s): {:8.1} MiB",
            fraction * 100.0,
            wall * fraction,
            mib(*kib)
        );
    }
    eprintln!(
        "  peak VmHWM {:.1} MiB (sampled VmRSS max {:.1} MiB)",
        mib(peak_hwm),
        mib(peak_rss)
    );
    let (disk_bytes, disk_allocated, disk_files) = disk_usage(&dir.path().join("run"));
    let tuples_per_sec = tuples as f64 / wall;
    eprintln!(
        "\n{tuples} tuples ({variant_rows} variant rows × {subjects} subjects) in {wall:.1} s: \
         {tuples_per_sec:.0} tuples/s end to end; {calls} calls at the server; run dir {:.1} MiB in {disk_files} files",
        disk_bytes as f64 / (1024.0 * 1024.0)
    );

    // The cache: files and bytes, then a cached rerun of the whole sweep
    // (a fresh run directory holding only this cache).
    let layout = std::env::var("CFEVAL_CACHE_LAYOUT").unwrap_or_else(|_| "packed".into());
    let (cache_bytes, cache_allocated, cache_files) = disk_usage(&dir.path().join("run/cache"));
    let aside = dir.path().join("cache-aside");
    std::fs::rename(dir.path().join("run/cache"), &aside).expect("move the cache aside");
    std::fs::remove_dir_all(dir.path().join("run")).expect("remove the run");
    std::fs::create_dir_all(dir.path().join("run")).expect("recreate the run");
    std::fs::rename(&aside, dir.path().join("run/cache")).expect("move the cache back");
    eprintln!(
        "\ncached rerun ({layout} cache: {cache_files} files, {:.1} MiB):",
        cache_bytes as f64 / (1024.0 * 1024.0)
    );
    // A cold rerun (`CFEVAL_SWEEP_COLD=1`, root only): the page cache
    // dropped first, as on the morning after, when the cache is read from
    // disk rather than memory.
    let cold = std::env::var("CFEVAL_SWEEP_COLD").is_ok_and(|value| value == "1");
    if cold {
        let synced = Command::new("sync").status().is_ok_and(|status| status.success());
        assert!(synced, "sync failed");
        std::fs::write("/proc/sys/vm/drop_caches", "3\n").expect(
            "CFEVAL_SWEEP_COLD=1 drops the page cache: it needs root (write /proc/sys/vm/drop_caches)",
        );
    }
    let before_rerun = server.requests();
    let rerun = run_child(&binary, dir.path(), &pipeline);
    let rerun_calls = server.requests() - before_rerun;
    let rerun_infer = infer_span_of(&rerun.lines);
    let rerun_hwm = rerun
        .samples
        .iter()
        .map(|sample| sample.hwm_kib)
        .max()
        .unwrap_or(0);
    eprintln!(
        "cached rerun: {:.1} s wall, infer {:.1} s, {rerun_calls} calls at the server, peak {:.1} MiB",
        rerun.wall,
        rerun_infer.map_or(f64::NAN, |(begin, end)| end - begin),
        mib(rerun_hwm)
    );

    let round1 = |value: f64| (value * 10.0).round() / 10.0;
    let stage = |span: Option<(f64, f64)>| span.map(|(begin, end)| round1(end - begin));
    let json = serde_json::json!({
        "bench": "sweep",
        "tuples": tuples,
        "cases": cases,
        "variant_rows": variant_rows,
        "subjects": subjects,
        "http_subjects": HTTP_SUBJECTS,
        "concurrency": concurrency,
        "resamples": resamples,
        "wall_s": round1(wall),
        "tuples_per_s": tuples_per_sec.round(),
        "server_calls": calls,
        "server_calls_per_model": per_model.iter().map(|(model, count)| (model.clone(), serde_json::json!(count))).collect::<serde_json::Map<_, _>>(),
        "model_calls": model_calls,
        "errors": errors,
        "stages_s": {
            "cases_perturb": infer_span.map(|(begin, _)| round1(begin)),
            "infer": stage(infer_span),
            "judge": stage(judge_span),
            "aggregate_report": judge_span.map(|(_, end)| round1(wall - end)),
        },
        "infer_calls_per_s": infer_span.map(|(begin, end)| (calls as f64 / (end - begin)).round()),
        "rss_mib": timeline.iter().map(|(fraction, kib)| (format!("{:.0}%", fraction * 100.0), serde_json::json!(round1(mib(*kib))))).collect::<serde_json::Map<_, _>>(),
        "peak_rss_mib": round1(mib(peak_hwm)),
        "peak_rss_mib_by_stage": {
            "infer": peak_in(infer_span).map(|kib| round1(mib(kib))),
            "judge": peak_in(judge_span).map(|kib| round1(mib(kib))),
        },
        "infer_rss_drift_mib": infer_drift.map(|kib| round1(kib as f64 / 1024.0)),
        "run_dir_mib": round1(disk_bytes as f64 / (1024.0 * 1024.0)),
        "run_dir_allocated_mib": round1(disk_allocated as f64 / (1024.0 * 1024.0)),
        "run_dir_files": disk_files,
        "goal_peak_rss_mib": 512,
        "cache": {
            "layout": layout,
            "files": cache_files,
            "mib": round1(cache_bytes as f64 / (1024.0 * 1024.0)),
            "allocated_mib": round1(cache_allocated as f64 / (1024.0 * 1024.0)),
        },
        "cached_rerun": {
            "wall_s": round1(rerun.wall),
            "infer_s": rerun_infer.map(|(begin, end)| round1(end - begin)),
            "server_calls": rerun_calls,
            "peak_rss_mib": round1(mib(rerun_hwm)),
            "page_cache_dropped": cold,
        },
    });
    println!("{json}");
    drop(server);
    if keep {
        let kept = dir.keep();
        eprintln!("kept {}", kept.display());
    }
}
