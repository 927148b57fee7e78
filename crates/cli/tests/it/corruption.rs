//! Corruption: a small real run (12 cases, `control/reference` and
//! `control/erratic`, the rule judge) is built once and copied for each kind
//! of damage. For every kind, `cfeval verify` names the damaged file and
//! fails, and `cfeval judge`, `cfeval aggregate` and `cfeval run` each
//! either refuse with a message naming what is wrong, or — when they do not
//! read the damaged data — leave the scores as they were; a `cfeval run`
//! that redoes what is missing must end with the undamaged run's scores and
//! an intact run. No command exits 0 with scores computed over damaged or
//! missing data.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::workspace_root;

/// The run's folder inside each case folder (commands run from the case
/// folder with this relative path, so that copies are the same run).
const RUN: &str = "run";

fn catalog() -> PathBuf {
    workspace_root().join("data/packs/oncology/catalog.yaml")
}

fn pipeline_text(name: &str, cases: usize, seed: u64) -> String {
    format!(
        "[run]\nname = \"{name}\"\nseed = 5\n\n[cases]\ncohort = {{ cases = {cases}, seed = {seed} }}\n\n\
         [catalog]\npath = \"{}\"\n\n[[subjects]]\nname = \"control/reference\"\n\n\
         [[subjects]]\nname = \"control/erratic\"\n\n[[judges]]\nname = \"rule\"\n\n\
         [aggregate]\nresamples = 200\n",
        catalog().display()
    )
}

/// `cfeval ARGS` run from `cwd`.
fn cfeval_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .current_dir(cwd)
        .args(args)
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .output()
        .expect("run cfeval")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn succeeded(output: Output, what: &str) -> String {
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    stdout
}

/// The undamaged run, built once, and a second run to take foreign shards from.
struct Base {
    root: PathBuf,
    pipeline: PathBuf,
    /// `cfeval show scores` of the undamaged run, sorted.
    scores: Vec<String>,
    /// Another run (other cases), for shards from another run.
    other: PathBuf,
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        // Inside the target folder: every case folder is removed after use,
        // the base runs (about 1 MiB) by the next test process.
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        for item in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("corruption-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(item.path());
            }
        }
        let root = tmp.join(format!("corruption-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("mkdir");
        let pipeline = root.join("pipeline.toml");
        std::fs::write(&pipeline, pipeline_text("integrity", 12, 1)).expect("pipeline");
        let base = root.join("base");
        std::fs::create_dir_all(&base).expect("mkdir");
        let pipeline_arg = pipeline.to_str().expect("utf-8");
        succeeded(
            cfeval_in(&base, &["run", pipeline_arg, "--run-dir", RUN]),
            "the base run",
        );
        let other_pipeline = root.join("other.toml");
        std::fs::write(&other_pipeline, pipeline_text("integrity", 6, 9)).expect("pipeline");
        let other = root.join("other");
        std::fs::create_dir_all(&other).expect("mkdir");
        succeeded(
            cfeval_in(
                &other,
                &["run", other_pipeline.to_str().expect("utf-8"), "--run-dir", RUN],
            ),
            "the other run",
        );
        let scores = show_scores(&base).expect("scores of the base run");
        assert!(scores.len() > 20, "the base run has scores: {scores:?}");
        Base {
            root,
            pipeline,
            scores,
            other: other.join(RUN),
        }
    })
}

/// `cfeval show scores` in `case`, sorted; `None` when it fails.
fn show_scores(case: &Path) -> Option<Vec<String>> {
    let output = cfeval_in(case, &["show", "scores", "--run", RUN]);
    if !output.status.success() {
        return None;
    }
    let mut lines: Vec<String> = text(&output).0.lines().map(str::to_string).collect();
    lines.sort();
    Some(lines)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for item in std::fs::read_dir(from).expect("read_dir") {
        let item = item.expect("item");
        let target = to.join(item.file_name());
        let kind = item.file_type().expect("file type");
        if kind.is_dir() {
            copy_dir(&item.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(item.path()).expect("link"), &target)
                .expect("link");
        } else {
            std::fs::copy(item.path(), &target).expect("copy");
        }
    }
}

/// A case folder holding a copy of the run, removed when dropped.
struct CaseDir(PathBuf);

impl std::ops::Deref for CaseDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for CaseDir {
    fn drop(&mut self) {
        let _ = Command::new("chmod").args(["-R", "u+w"]).arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh copy of the undamaged run.
fn fresh_case(name: &str) -> CaseDir {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let base = base();
    let case = base.root.join(format!(
        "case-{}-{}",
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    ));
    copy_dir(&base.root.join("base").join(RUN), &case.join(RUN));
    CaseDir(case)
}

// ---- damage helpers ----------------------------------------------------

fn table(run: &Path, table: &str) -> PathBuf {
    run.join(table)
}

fn part(run: &Path, name: &str, index: u32) -> PathBuf {
    table(run, name).join(format!("part-{index:05}.parquet"))
}

fn entry_path(run: &Path, name: &str, index: u32) -> PathBuf {
    table(run, name).join(format!("_manifest/part-{index:05}.json"))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read json")).expect("json")
}

fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write json");
}

fn edit_entry(run: &Path, name: &str, index: u32, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = entry_path(run, name, index);
    let mut value = read_json(&path);
    edit(&mut value);
    write_json(&path, &value);
}

/// The unit record of `unit` in table `name`.
fn record_path(run: &Path, name: &str, unit_prefix: &str) -> PathBuf {
    let dir = table(run, name).join("_manifest");
    for item in std::fs::read_dir(&dir).expect("manifest") {
        let path = item.expect("item").path();
        let file = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        if file.starts_with("unit-")
            && read_json(&path)["unit"]
                .as_str()
                .is_some_and(|unit| unit.starts_with(unit_prefix))
        {
            return path;
        }
    }
    panic!("no unit record of {unit_prefix} in {}", dir.display());
}

/// The part index of the first shard of `unit_prefix` in table `name`.
fn part_of_unit(run: &Path, name: &str, unit_prefix: &str) -> u32 {
    let record = read_json(&record_path(run, name, unit_prefix));
    let file = record["shards"][0].as_str().expect("a shard");
    file.trim_start_matches("part-")
        .trim_end_matches(".parquet")
        .parse()
        .expect("part number")
}

fn flip(path: &Path, offset: impl FnOnce(usize) -> usize) {
    let mut bytes = std::fs::read(path).expect("read shard");
    let at = offset(bytes.len());
    bytes[at] ^= 0x5a;
    std::fs::write(path, bytes).expect("write shard");
}

/// A byte in the first column chunk (data pages start after `PAR1`).
fn data_page(_len: usize) -> usize {
    64
}

/// A byte inside the footer's metadata (before its length and `PAR1`).
fn footer(len: usize) -> usize {
    len - 40
}

fn set_len(path: &Path, len: impl FnOnce(u64) -> u64) {
    let file = std::fs::OpenOptions::new().write(true).open(path).expect("open");
    let current = file.metadata().expect("metadata").len();
    file.set_len(len(current)).expect("truncate");
}

fn swap(a: &Path, b: &Path) {
    let (first, second) = (std::fs::read(a).expect("a"), std::fs::read(b).expect("b"));
    std::fs::write(a, second).expect("write a");
    std::fs::write(b, first).expect("write b");
}

fn python() -> PathBuf {
    std::env::var_os("CFEVAL_PYTHON").map_or_else(|| workspace_root().join(".venv/bin/python"), PathBuf::from)
}

/// Writes a Parquet file that cfeval did not write (pyarrow, no footer
/// provenance) at `path`.
fn foreign_parquet(path: &Path) {
    let script = format!(
        "import pyarrow as pa, pyarrow.parquet as pq\n\
         pq.write_table(pa.table({{'subject': ['control/reference'] * 50, 'score': [1.0] * 50}}), {:?})\n",
        path.display().to_string()
    );
    let python = python();
    assert!(
        python.exists(),
        "{} not found: run `bash scripts/install.sh`",
        python.display()
    );
    let output = Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("python");
    assert!(
        output.status.success(),
        "pyarrow: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A catalog's hash, the pre-registration lock (its file's with its pack's).
fn catalog_hash(path: &Path) -> String {
    cfeval_perturb::catalog::Catalog::load(path)
        .expect("catalog")
        .hash()
        .to_string()
}

fn blake3_of(path: &Path) -> String {
    cfeval_schema::ids::hash_reader(std::fs::File::open(path).expect("open")).expect("hash")
}

// ---- expectations ------------------------------------------------------

/// What a command must do on the damaged run.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Exit non-zero; stderr names each fragment.
    Refuse(&'static [&'static str]),
    /// Exit 0 without touching the scores (the command does not read the
    /// damaged data, and computes no scores from it).
    Skips,
    /// Exit 0 with the scores the same command leaves on the undamaged run
    /// (it computes them from tables the damage did not touch).
    Same,
    /// [`Expect::Same`], having redone what was damaged or missing: the run
    /// is intact afterwards.
    Heals,
}

/// `cfeval ARGS` for `command` in a case folder.
fn command_args(command: &str) -> Vec<String> {
    let pipeline = base().pipeline.to_str().expect("utf-8").to_string();
    let args: Vec<&str> = match command {
        "judge" => vec!["judge", "--run", RUN, "--judge", "rule"],
        "aggregate" => vec!["aggregate", "--run", RUN],
        _ => vec!["run", &pipeline, "--run-dir", RUN],
    };
    args.into_iter().map(str::to_string).collect()
}

/// The scores `command` leaves on a copy of the undamaged run (`cfeval
/// aggregate` uses its default settings, not the pipeline's, so it
/// recomputes them).
fn reference_scores(command: &str) -> &'static Vec<String> {
    static REFERENCES: OnceLock<std::sync::Mutex<std::collections::BTreeMap<String, &'static Vec<String>>>> =
        OnceLock::new();
    let references = REFERENCES.get_or_init(Default::default);
    let mut references = references.lock().expect("lock");
    references.entry(command.to_string()).or_insert_with(|| {
        let dir = fresh_case(&format!("reference-{command}"));
        let args = command_args(command);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        succeeded(cfeval_in(&dir, &args), &format!("{command} on the undamaged run"));
        Box::leak(Box::new(show_scores(&dir).expect("reference scores")))
    })
}

struct Case {
    name: &'static str,
    damage: fn(&Path),
    /// Fragments `cfeval verify` prints (the damaged file and what is wrong).
    verify: &'static [&'static str],
    judge: Expect,
    aggregate: Expect,
    run: Expect,
}

/// Every file of the scores folder with its content.
fn scores_files(case: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = case.join(RUN).join("scores");
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for item in read {
            let path = item.expect("item").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

/// Runs `command` on a fresh damaged copy; what it did wrong, if anything.
fn check_command(case: &Case, command: &str, expect: Expect) -> Option<String> {
    let dir = fresh_case(case.name);
    (case.damage)(&dir.join(RUN));
    let before = scores_files(&dir);
    let args = command_args(command);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = cfeval_in(&dir, &args);
    let (stdout, stderr) = text(&output);
    let what = format!("{}: cfeval {command}", case.name);
    match expect {
        Expect::Refuse(fragments) => {
            if output.status.success() {
                return Some(format!("{what} exited 0 on a damaged run:\n{stdout}\n{stderr}"));
            }
            let missing: Vec<&&str> = fragments
                .iter()
                .filter(|fragment| !stderr.contains(**fragment))
                .collect();
            if !missing.is_empty() {
                return Some(format!("{what}: the refusal does not say {missing:?}:\n{stderr}"));
            }
        }
        Expect::Skips => {
            if !output.status.success() {
                return Some(format!("{what} failed (expected to skip):\n{stdout}\n{stderr}"));
            }
            if scores_files(&dir) != before {
                return Some(format!("{what} changed the scores of a damaged run"));
            }
        }
        Expect::Same | Expect::Heals => {
            if !output.status.success() {
                return Some(format!(
                    "{what} failed (expected {expect:?}):\n{stdout}\n{stderr}"
                ));
            }
            if show_scores(&dir).as_ref() != Some(reference_scores(command)) {
                return Some(format!(
                    "{what}: the scores differ from those it leaves on the undamaged run"
                ));
            }
            let verify = cfeval_in(&dir, &["verify", RUN]);
            if matches!(expect, Expect::Heals) && !verify.status.success() {
                return Some(format!("{what}: verify after it: {}", text(&verify).0));
            }
        }
    }
    None
}

/// Everything `case` gets wrong.
fn check(case: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    let dir = fresh_case(case.name);
    (case.damage)(&dir.join(RUN));
    let output = cfeval_in(&dir, &["verify", RUN]);
    let (stdout, stderr) = text(&output);
    if output.status.success() || !stderr.contains("is damaged") {
        wrong.push(format!("{}: verify did not fail:\n{stdout}\n{stderr}", case.name));
    }
    for fragment in case.verify {
        if !stdout
            .lines()
            .any(|line| !line.starts_with("note:") && line.contains(fragment))
        {
            wrong.push(format!(
                "{}: verify does not report {fragment:?}:\n{stdout}",
                case.name
            ));
        }
    }
    for (command, expect) in [
        ("judge", case.judge),
        ("aggregate", case.aggregate),
        ("run", case.run),
    ] {
        wrong.extend(check_command(case, command, expect));
    }
    wrong
}

/// Checks every case (all of them, then says everything that went wrong).
fn check_all(cases: &[Case]) {
    let wrong: Vec<String> = cases.iter().flat_map(check).collect();
    assert!(
        wrong.is_empty(),
        "{} of {} damage kinds handled wrongly:\n\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n\n")
    );
}

// ---- the damage --------------------------------------------------------

use Expect::{Heals, Refuse, Same, Skips};

const BLAKE3_R0: &str =
    "responses/part-00000.parquet: BLAKE3 differs from its manifest entry _manifest/part-00000.json";

#[test]
fn byte_flips_in_data_pages_and_footers_of_every_table() {
    check_all(&[
        Case {
            name: "responses data page",
            damage: |run| flip(&part(run, "responses", 0), data_page),
            verify: &[BLAKE3_R0],
            judge: Refuse(&[BLAKE3_R0, "the shard is damaged; run `cfeval verify run`"]),
            aggregate: Refuse(&[BLAKE3_R0]),
            run: Refuse(&[BLAKE3_R0]),
        },
        Case {
            name: "responses footer",
            damage: |run| flip(&part(run, "responses", 0), footer),
            verify: &[BLAKE3_R0],
            judge: Refuse(&[BLAKE3_R0]),
            aggregate: Refuse(&[BLAKE3_R0]),
            run: Refuse(&[BLAKE3_R0]),
        },
        Case {
            name: "variants data page",
            damage: |run| flip(&part(run, "variants", 0), data_page),
            verify: &["variants/part-00000.parquet: BLAKE3 differs"],
            judge: Refuse(&["variants/part-00000.parquet: BLAKE3 differs"]),
            aggregate: Same,
            run: Refuse(&["variants/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "variants footer",
            damage: |run| flip(&part(run, "variants", 0), footer),
            verify: &["variants/part-00000.parquet: BLAKE3 differs"],
            judge: Refuse(&["variants/part-00000.parquet: BLAKE3 differs"]),
            aggregate: Same,
            run: Refuse(&["variants/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "judgments data page",
            damage: |run| flip(&part(run, "judgments", 0), data_page),
            verify: &["judgments/part-00000.parquet: BLAKE3 differs"],
            judge: Skips,
            aggregate: Refuse(&["judgments/part-00000.parquet: BLAKE3 differs"]),
            run: Refuse(&["judgments/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "judgments footer",
            damage: |run| flip(&part(run, "judgments", 0), footer),
            verify: &["judgments/part-00000.parquet: BLAKE3 differs"],
            judge: Skips,
            aggregate: Refuse(&["judgments/part-00000.parquet: BLAKE3 differs"]),
            run: Refuse(&["judgments/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "cases data page",
            damage: |run| flip(&part(run, "cases", 0), data_page),
            verify: &["cases/part-00000.parquet: BLAKE3 differs"],
            judge: Refuse(&["cases/part-00000.parquet: BLAKE3 differs"]),
            aggregate: Same,
            run: Refuse(&["cases/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "cases footer",
            damage: |run| flip(&part(run, "cases", 0), footer),
            verify: &["cases/part-00000.parquet: BLAKE3 differs"],
            judge: Refuse(&["cases/part-00000.parquet: BLAKE3 differs"]),
            aggregate: Same,
            run: Refuse(&["cases/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "scores data page",
            damage: |run| flip(&part(run, "scores", 0), data_page),
            verify: &["scores/part-00000.parquet: BLAKE3 differs"],
            judge: Skips,
            aggregate: Heals,
            run: Refuse(&["scores/part-00000.parquet: BLAKE3 differs"]),
        },
        Case {
            name: "scores footer",
            damage: |run| flip(&part(run, "scores", 0), footer),
            verify: &["scores/part-00000.parquet: BLAKE3 differs"],
            judge: Skips,
            aggregate: Heals,
            run: Refuse(&["scores/part-00000.parquet: BLAKE3 differs"]),
        },
    ]);
}

#[test]
fn truncated_emptied_swapped_and_foreign_shards() {
    const SIZE_R0: &str = "responses/part-00000.parquet: ";
    check_all(&[
        Case {
            name: "truncated shard",
            damage: |run| set_len(&part(run, "responses", 0), |len| len / 2),
            verify: &[
                SIZE_R0,
                "bytes on disk, its manifest entry _manifest/part-00000.json says",
            ],
            judge: Refuse(&[SIZE_R0, "bytes on disk"]),
            aggregate: Refuse(&[SIZE_R0, "bytes on disk"]),
            run: Refuse(&[SIZE_R0, "bytes on disk"]),
        },
        Case {
            name: "zero-length shard",
            damage: |run| set_len(&part(run, "judgments", 0), |_| 0),
            verify: &["judgments/part-00000.parquet: 0 bytes on disk"],
            judge: Refuse(&["judgments/part-00000.parquet: 0 bytes on disk"]),
            aggregate: Refuse(&["judgments/part-00000.parquet: 0 bytes on disk"]),
            run: Refuse(&["judgments/part-00000.parquet: 0 bytes on disk"]),
        },
        Case {
            name: "shards swapped between tables",
            damage: |run| swap(&part(run, "responses", 0), &part(run, "judgments", 0)),
            verify: &["responses/part-00000.parquet: ", "judgments/part-00000.parquet: "],
            judge: Refuse(&["responses/part-00000.parquet"]),
            aggregate: Refuse(&["judgments/part-00000.parquet"]),
            run: Refuse(&["responses/part-00000.parquet"]),
        },
        Case {
            name: "shards swapped between units",
            damage: |run| {
                let reference = part_of_unit(run, "responses", "subject=control/reference/");
                let erratic = part_of_unit(run, "responses", "subject=control/erratic/");
                swap(
                    &part(run, "responses", reference),
                    &part(run, "responses", erratic),
                );
            },
            verify: &["responses/part-00000.parquet: ", "responses/part-00001.parquet: "],
            judge: Refuse(&["responses/part-0000"]),
            aggregate: Refuse(&["responses/part-0000"]),
            run: Refuse(&["responses/part-0000"]),
        },
        Case {
            name: "a foreign Parquet file in place of a shard",
            damage: |run| foreign_parquet(&part(run, "responses", 0)),
            verify: &[SIZE_R0],
            judge: Refuse(&[SIZE_R0]),
            aggregate: Refuse(&[SIZE_R0]),
            run: Refuse(&[SIZE_R0]),
        },
        Case {
            name: "a foreign Parquet file with a forged manifest entry",
            damage: |run| {
                let shard = part(run, "responses", 0);
                foreign_parquet(&shard);
                let (bytes, hash) = (std::fs::metadata(&shard).expect("size").len(), blake3_of(&shard));
                edit_entry(run, "responses", 0, |entry| {
                    entry["bytes"] = bytes.into();
                    entry["blake3"] = hash.into();
                });
            },
            verify: &["responses/part-00000.parquet: has no cfeval footer"],
            judge: Refuse(&["responses/part-00000.parquet: has no cfeval footer"]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&["responses/part-00000.parquet: has no cfeval footer"]),
        },
        Case {
            name: "a shard from another run",
            damage: |run| {
                std::fs::copy(part(&base().other, "responses", 0), part(run, "responses", 0)).expect("copy");
            },
            verify: &[SIZE_R0],
            judge: Refuse(&[SIZE_R0]),
            aggregate: Refuse(&[SIZE_R0]),
            run: Refuse(&[SIZE_R0]),
        },
        Case {
            name: "a shard from another run with its manifest entry",
            damage: |run| {
                std::fs::copy(part(&base().other, "responses", 0), part(run, "responses", 90)).expect("copy");
                let mut entry = read_json(&entry_path(&base().other, "responses", 0));
                entry["file"] = "part-00090.parquet".into();
                write_json(&entry_path(run, "responses", 90), &entry);
            },
            verify: &["part-00090.parquet belongs to it, but its completion record does not list it"],
            judge: Refuse(&["table `responses` of run run is not ready", "is damaged"]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Heals,
        },
        Case {
            name: "a shard and entry of another table",
            damage: |run| {
                std::fs::copy(part(run, "variants", 0), part(run, "responses", 5)).expect("copy");
                let mut entry = read_json(&entry_path(run, "variants", 0));
                entry["file"] = "part-00005.parquet".into();
                write_json(&entry_path(run, "responses", 5), &entry);
            },
            verify: &[
                "responses/_manifest/part-00005.json: is an entry of table `variants`, not of `responses`",
            ],
            judge: Refuse(&["is an entry of table `variants`, not of `responses`"]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&["is an entry of table `variants`, not of `responses`"]),
        },
        Case {
            name: "a symbolic link in place of a shard",
            damage: |run| {
                let shard = part(run, "responses", 0);
                let elsewhere = run.parent().expect("case").join("elsewhere.parquet");
                std::fs::rename(&shard, &elsewhere).expect("move");
                std::os::unix::fs::symlink(&elsewhere, &shard).expect("symlink");
            },
            verify: &["responses/part-00000.parquet: is a symbolic link"],
            judge: Refuse(&["responses/part-00000.parquet: is a symbolic link"]),
            aggregate: Refuse(&["responses/part-00000.parquet: is a symbolic link"]),
            run: Refuse(&["responses/part-00000.parquet: is a symbolic link"]),
        },
    ]);
}

#[test]
fn edited_and_unsafe_manifest_entries() {
    const NOT_PLAIN: &str = "which is not a plain part-NNNNN.parquet file of its table folder";
    check_all(&[
        Case {
            name: "rows edited",
            damage: |run| {
                edit_entry(run, "responses", 0, |entry| {
                    entry["rows"] = (entry["rows"].as_u64().expect("rows") + 1).into();
                });
            },
            verify: &[
                "responses/part-00000.parquet: its footer says",
                "rows, its manifest entry",
            ],
            judge: Refuse(&["is damaged (its completion record says"]),
            aggregate: Refuse(&["responses/part-00000.parquet: its footer says"]),
            run: Refuse(&["responses/part-00000.parquet: its footer says"]),
        },
        Case {
            name: "bytes edited",
            damage: |run| edit_entry(run, "responses", 0, |entry| entry["bytes"] = 12345.into()),
            verify: &["responses/part-00000.parquet: ", "says 12345"],
            judge: Refuse(&["says 12345"]),
            aggregate: Refuse(&["says 12345"]),
            run: Refuse(&["says 12345"]),
        },
        Case {
            name: "blake3 edited",
            damage: |run| {
                edit_entry(run, "responses", 0, |entry| {
                    entry["blake3"] = "0".repeat(64).into()
                })
            },
            verify: &[BLAKE3_R0],
            judge: Refuse(&[BLAKE3_R0]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&[BLAKE3_R0]),
        },
        Case {
            name: "file edited to another shard",
            damage: |run| {
                edit_entry(run, "responses", 0, |entry| {
                    entry["file"] = "part-00001.parquet".into()
                })
            },
            verify: &["names shard part-00001.parquet, but the entry of that shard is part-00001.json"],
            judge: Refuse(&["responses/_manifest/part-00000.json: names shard part-00001.parquet"]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&["responses/_manifest/part-00000.json: names shard part-00001.parquet"]),
        },
        Case {
            name: "path traversal",
            damage: |run| {
                edit_entry(run, "responses", 0, |entry| {
                    entry["file"] = "../../OTHER/responses/part-00000.parquet".into();
                });
            },
            verify: &["\"../../OTHER/responses/part-00000.parquet\"", NOT_PLAIN],
            judge: Refuse(&["\"../../OTHER/responses/part-00000.parquet\"", NOT_PLAIN]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&["\"../../OTHER/responses/part-00000.parquet\"", NOT_PLAIN]),
        },
        Case {
            name: "absolute path",
            damage: |run| {
                let outside = part(&base().other, "responses", 0).display().to_string();
                edit_entry(run, "responses", 0, |entry| entry["file"] = outside.into());
            },
            verify: &["responses/_manifest/part-00000.json: names shard \"/", NOT_PLAIN],
            judge: Refuse(&[NOT_PLAIN]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&[NOT_PLAIN]),
        },
        Case {
            name: "sub-folder",
            damage: |run| {
                let sub = table(run, "responses").join("sub");
                std::fs::create_dir_all(&sub).expect("mkdir");
                std::fs::rename(part(run, "responses", 0), sub.join("part-00000.parquet")).expect("move");
                edit_entry(run, "responses", 0, |entry| {
                    entry["file"] = "sub/part-00000.parquet".into()
                });
            },
            verify: &["\"sub/part-00000.parquet\"", NOT_PLAIN],
            judge: Refuse(&[NOT_PLAIN]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Refuse(&[NOT_PLAIN]),
        },
        Case {
            name: "catalog hash edited",
            damage: |run| {
                edit_entry(run, "responses", 0, |entry| {
                    entry["catalog_hash"] = "forged".into()
                })
            },
            verify: &["responses/part-00000.parquet: its footer says catalog hash"],
            judge: Refuse(&["its footer says catalog hash"]),
            aggregate: Refuse(&["its footer says catalog hash"]),
            run: Refuse(&["its footer says catalog hash"]),
        },
        Case {
            name: "garbage JSON manifest entry",
            damage: |run| {
                std::fs::write(entry_path(run, "responses", 0), b"{\"file\": garbage").expect("write")
            },
            verify: &["responses/_manifest/part-00000.json: not a valid manifest file"],
            judge: Refuse(&["invalid manifest entry", "responses/_manifest/part-00000.json"]),
            aggregate: Refuse(&[
                "`responses` cannot be read: invalid manifest entry run/responses/_manifest/part-00000.json",
            ]),
            run: Refuse(&["invalid manifest entry", "responses/_manifest/part-00000.json"]),
        },
        Case {
            name: "garbage JSON unit record",
            damage: |run| {
                std::fs::write(record_path(run, "judgments", "judge=rule"), b"[1, 2").expect("write");
            },
            verify: &["not a valid manifest file"],
            judge: Refuse(&["invalid manifest entry", "judgments/_manifest/unit-"]),
            aggregate: Refuse(&["invalid manifest entry", "judgments/_manifest/unit-"]),
            run: Refuse(&["invalid manifest entry", "judgments/_manifest/unit-"]),
        },
    ]);
}

#[test]
fn deleted_tables_entries_and_records() {
    check_all(&[
        Case {
            name: "variants deleted",
            damage: |run| std::fs::remove_dir_all(table(run, "variants")).expect("remove"),
            verify: &["run/variants: table `variants` is missing, but `responses` was computed from it"],
            judge: Refuse(&[
                "table `variants` of run run is not ready: the table is missing",
                "cfeval perturb",
            ]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`variants` is gone)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Heals,
        },
        Case {
            name: "responses deleted",
            damage: |run| std::fs::remove_dir_all(table(run, "responses")).expect("remove"),
            verify: &["run/responses: table `responses` is missing, but `judgments` was computed from it"],
            judge: Refuse(&["has no responses to judge"]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` is gone)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Heals,
        },
        Case {
            name: "judgments deleted",
            damage: |run| std::fs::remove_dir_all(table(run, "judgments")).expect("remove"),
            verify: &["run/judgments: table `judgments` is missing, but `scores` was computed from it"],
            judge: Skips,
            aggregate: Refuse(&[
                "run run has no judgments (nothing to aggregate in run/judgments)",
                "cfeval judge --run run --judge JUDGE",
            ]),
            run: Heals,
        },
        Case {
            name: "responses manifest folder deleted",
            damage: |run| std::fs::remove_dir_all(table(run, "responses").join("_manifest")).expect("remove"),
            verify: &["run/responses: no manifest folder (_manifest/ is missing)"],
            judge: Refuse(&["has no manifest folder (_manifest/ is missing)"]),
            aggregate: Refuse(&["`responses` cannot be read", "has no manifest folder"]),
            run: Heals,
        },
        Case {
            name: "a responses manifest entry deleted",
            damage: |run| std::fs::remove_file(entry_path(run, "responses", 1)).expect("remove"),
            verify: &["its completion record names part-00001.parquet, which has no manifest entry"],
            judge: Refuse(&[
                "its completion record names part-00001.parquet, which has no manifest entry",
                "cfeval infer --run run --subject control/",
            ]),
            aggregate: Refuse(&[
                "unit `judge=rule` is stale (`responses` changed after it completed)",
                "cfeval judge --run run --judge rule",
            ]),
            run: Heals,
        },
        Case {
            name: "the variants manifest entry deleted",
            damage: |run| std::fs::remove_file(entry_path(run, "variants", 0)).expect("remove"),
            verify: &["its completion record names part-00000.parquet, which has no manifest entry"],
            judge: Refuse(&[
                "table `variants` of run run is not ready: it has no committed shards",
                "cfeval perturb --run run",
            ]),
            aggregate: Refuse(&["unit `judge=rule` is stale (`variants` changed after it completed)"]),
            run: Refuse(&["variants"]),
        },
        Case {
            name: "a unit record deleted",
            damage: |run| {
                std::fs::remove_file(record_path(run, "responses", "subject=control/reference/"))
                    .expect("remove");
            },
            verify: &[
                "has no completion record, but `judgments` unit `judge=rule` was computed from this table as it is",
            ],
            judge: Refuse(&[
                "is partial",
                "cfeval infer --run run --subject control/reference --mode single_shot",
            ]),
            aggregate: Same,
            run: Heals,
        },
        Case {
            name: "a unit record naming a missing shard",
            damage: |run| {
                let path = record_path(run, "responses", "subject=control/reference/");
                let mut record = read_json(&path);
                record["shards"]
                    .as_array_mut()
                    .expect("shards")
                    .push("part-00042.parquet".into());
                write_json(&path, &record);
            },
            verify: &["its completion record names part-00042.parquet, which has no manifest entry"],
            judge: Refuse(&["part-00042.parquet, which has no manifest entry"]),
            aggregate: Same,
            run: Heals,
        },
        Case {
            name: "a unit record's fingerprint edited",
            damage: |run| {
                let path = record_path(run, "responses", "subject=control/erratic/");
                let mut record = read_json(&path);
                record["fingerprint"] = "forged".into();
                write_json(&path, &record);
            },
            verify: &["was made under another fingerprint than the unit completed with"],
            judge: Refuse(&["was made under another fingerprint"]),
            aggregate: Same,
            run: Heals,
        },
    ]);
}

/// The catalog lock holds whatever order the stages run in, and stale
/// inputs are refused with the command that fixes them.
#[test]
fn another_catalog_and_stale_inputs_are_refused() {
    let dir = fresh_case("catalog");
    let edited = dir.join("edited.yaml");
    let revised = std::fs::read_to_string(catalog()).expect("catalog") + "\n# revised after infer\n";
    std::fs::write(&edited, &revised).expect("edited catalog");
    let edited_arg = edited.to_str().expect("utf-8");
    let output = cfeval_in(&dir, &["perturb", "--run", RUN, "--catalog", edited_arg]);
    let (stdout, stderr) = text(&output);
    assert!(
        !output.status.success(),
        "re-perturb exited 0:\n{stdout}\n{stderr}"
    );
    for fragment in [
        "catalog lock: `responses` of run run was made under catalog",
        "would mix two catalogs in one run",
        "--retire-downstream",
    ] {
        assert!(stderr.contains(fragment), "{fragment:?}:\n{stderr}");
    }
    // Nothing was changed: the run is intact and its scores are the same.
    succeeded(cfeval_in(&dir, &["verify", RUN]), "verify after the refusal");
    assert_eq!(show_scores(&dir).as_ref(), Some(&base().scores));
    // Without variants, the responses still carry their catalog.
    std::fs::remove_dir_all(dir.join(RUN).join("variants")).expect("remove variants");
    let output = cfeval_in(&dir, &["perturb", "--run", RUN, "--catalog", edited_arg]);
    assert!(!output.status.success(), "re-perturb without variants exited 0");
    assert!(text(&output).1.contains("catalog lock"), "{}", text(&output).1);
    // Retiring is explicit, and leaves nothing mixed: later stages refuse
    // until they have run again, and the pipeline's catalog restores it all.
    let output = cfeval_in(
        &dir,
        &[
            "perturb",
            "--run",
            RUN,
            "--catalog",
            edited_arg,
            "--retire-downstream",
        ],
    );
    succeeded(output, "perturb --retire-downstream");
    let output = cfeval_in(&dir, &["judge", "--run", RUN, "--judge", "rule"]);
    assert!(!output.status.success());
    assert!(
        text(&output).1.contains("has no responses to judge"),
        "{}",
        text(&output).1
    );
    let output = cfeval_in(&dir, &["aggregate", "--run", RUN]);
    assert!(!output.status.success());
    assert!(
        text(&output)
            .1
            .contains("table `judgments` of run run is not ready: it has no committed shards"),
        "{}",
        text(&output).1
    );
    // Nothing downstream is left to mix with: the pipeline (its own catalog)
    // brings the run back.
    succeeded(
        cfeval_in(
            &dir,
            &["run", base().pipeline.to_str().expect("utf-8"), "--run-dir", RUN],
        ),
        "run after retiring",
    );
    succeeded(cfeval_in(&dir, &["verify", RUN]), "verify after the run");
    assert_eq!(show_scores(&dir).as_ref(), Some(&base().scores));

    // A pipeline whose catalog changed after infer: refused, and `--from
    // perturb` retires and redoes everything under the new catalog.
    let dir = fresh_case("pipeline-catalog");
    let edited = dir.join("edited.yaml");
    std::fs::write(&edited, revised.as_bytes()).expect("edited catalog");
    let pipeline = dir.join("edited.toml");
    let text_of_pipeline = std::fs::read_to_string(&base().pipeline)
        .expect("pipeline")
        .replace(&catalog().display().to_string(), &edited.display().to_string());
    std::fs::write(&pipeline, text_of_pipeline).expect("pipeline");
    let pipeline_arg = pipeline.to_str().expect("utf-8");
    let output = cfeval_in(&dir, &["run", pipeline_arg, "--run-dir", RUN]);
    let (stdout, stderr) = text(&output);
    assert!(
        !output.status.success(),
        "a changed catalog was run:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("catalog lock"), "{stderr}");
    assert!(stderr.contains("cfeval run PIPELINE --from perturb"), "{stderr}");
    succeeded(
        cfeval_in(
            &dir,
            &["run", pipeline_arg, "--run-dir", RUN, "--from", "perturb"],
        ),
        "run --from perturb with the new catalog",
    );
    let verify = succeeded(cfeval_in(&dir, &["verify", RUN]), "verify after --from perturb");
    assert!(verify.contains("intact"), "{verify}");
    let variants = succeeded(
        cfeval_in(
            &dir,
            &[
                "show",
                "variants",
                "--run",
                RUN,
                "--columns",
                "catalog_hash",
                "--limit",
                "1",
            ],
        ),
        "show variants",
    );
    let responses = succeeded(
        cfeval_in(
            &dir,
            &[
                "show",
                "responses",
                "--run",
                RUN,
                "--columns",
                "catalog_hash",
                "--limit",
                "1",
            ],
        ),
        "show responses",
    );
    assert_eq!(variants, responses, "one catalog in the run");
    assert!(
        !variants.contains(&catalog_hash(&catalog())) && variants.contains(&catalog_hash(&edited)),
        "the new catalog: {variants}"
    );

    // New responses after judging: aggregate refuses the stale judgments.
    let dir = fresh_case("stale");
    succeeded(
        cfeval_in(&dir, &["infer", "--run", RUN, "--subject", "control/constant"]),
        "infer another subject",
    );
    let output = cfeval_in(&dir, &["aggregate", "--run", RUN]);
    let stderr = text(&output).1;
    assert!(
        !output.status.success(),
        "aggregate over stale judgments exited 0"
    );
    for fragment in [
        "table `judgments` of run run is not ready: unit `judge=rule` is stale (`responses` changed after it completed)",
        "run `cfeval judge --run run --judge rule`",
    ] {
        assert!(stderr.contains(fragment), "{fragment:?}:\n{stderr}");
    }
    // A partial subject (one slice of two) is refused by the judge.
    let dir = fresh_case("slice");
    succeeded(
        cfeval_in(
            &dir,
            &[
                "infer",
                "--run",
                RUN,
                "--subject",
                "control/constant",
                "--shard",
                "1/2",
            ],
        ),
        "infer one slice",
    );
    let output = cfeval_in(&dir, &["judge", "--run", RUN, "--judge", "rule"]);
    let stderr = text(&output).1;
    assert!(!output.status.success(), "judge over a partial subject exited 0");
    assert!(
        stderr.contains("unit `subject=control/constant/mode=single_shot/slice=2-of-2` has not run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cfeval infer --run run --subject control/constant --mode single_shot --shard 2/2"),
        "{stderr}"
    );
}

/// Every file and folder under `root`, with its length and modification time.
fn snapshot(root: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in std::fs::read_dir(&dir).expect("read_dir") {
            let path = item.expect("item").path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                stack.push(path.clone());
            }
            files.push((path, metadata.len(), metadata.modified().expect("mtime")));
        }
    }
    files.sort();
    files
}

fn chmod(root: &Path, writable: bool) {
    let mode = if writable { "u+w" } else { "a-w" };
    let status = Command::new("chmod")
        .args(["-R", mode])
        .arg(root)
        .status()
        .expect("chmod");
    assert!(status.success());
}

/// An archived run the user cannot write is inspected without a write: no
/// lock or temp file is created, no orphan removed, no mtime changed (as
/// root, where permissions do not stop a write, the snapshot still does).
#[test]
fn a_read_only_run_is_shown_checked_and_verified_without_a_write() {
    let dir = fresh_case("read-only");
    let run = dir.join(RUN);
    for table in [
        "cases",
        "cases_quarantine",
        "variants",
        "responses",
        "judgments",
        "scores",
    ] {
        let _ = std::fs::remove_file(run.join(table).join(".lock"));
        let _ = std::fs::remove_dir_all(run.join(table).join(".tmp"));
    }
    // A partial write's orphan, which only a writer may remove.
    std::fs::write(run.join("responses/part-00077.parquet"), b"orphan").expect("orphan");
    chmod(&run, false);
    let before = snapshot(&run);
    for table in ["cases", "variants", "responses", "judgments", "scores"] {
        let stdout = succeeded(
            cfeval_in(&dir, &["show", table, "--run", RUN, "--limit", "3"]),
            &format!("show {table} on a read-only run"),
        );
        assert_eq!(stdout.lines().count(), 3, "{table}");
    }
    let status = succeeded(cfeval_in(&dir, &["status", RUN]), "status on a read-only run");
    assert!(status.contains("units: 7 complete"), "{status}");
    assert!(!status.contains("damaged"), "{status}");
    let verify = succeeded(cfeval_in(&dir, &["verify", RUN]), "verify on a read-only run");
    assert!(verify.contains("intact"), "{verify}");
    assert!(
        verify.contains("note: run/responses/part-00077.parquet: orphan shard"),
        "{verify}"
    );
    assert_eq!(snapshot(&run), before, "reading the run wrote to it");
    chmod(&run, true);
}

/// `show` says the manifest folder is gone (not that the table is), and
/// `status` shows damage per unit.
#[test]
fn show_and_status_name_the_damage() {
    let dir = fresh_case("show");
    let run = dir.join(RUN);
    std::fs::remove_dir_all(run.join("responses/_manifest")).expect("remove");
    let output = cfeval_in(&dir, &["show", "responses", "--run", RUN]);
    let stderr = text(&output).1;
    assert!(!output.status.success());
    assert!(
        stderr.contains("run/responses has no manifest folder (_manifest/ is missing)"),
        "{stderr}"
    );
    assert!(!stderr.contains("no folder"), "{stderr}");

    let dir = fresh_case("status");
    let run = dir.join(RUN);
    flip(&part(&run, "responses", 0), data_page);
    flip(&part(&run, "judgments", 0), footer);
    let status = succeeded(cfeval_in(&dir, &["status", RUN]), "status");
    let unit = read_json(&entry_path(&run, "responses", 0))["unit"]
        .as_str()
        .expect("unit")
        .to_string();
    let line = status
        .lines()
        .find(|line| line.contains(&unit))
        .unwrap_or_else(|| panic!("no line of {unit}:\n{status}"));
    assert!(line.contains("damaged (1 shard)"), "{status}");
    let line = status
        .lines()
        .find(|line| line.contains("judge=rule"))
        .unwrap_or_else(|| panic!("no judge line:\n{status}"));
    assert!(line.contains("damaged (1 shard)"), "{status}");
    assert!(status.contains("units: 5 complete, 2 damaged"), "{status}");
    assert!(
        status.contains("the run is damaged: `cfeval verify run`"),
        "{status}"
    );
}
