//! `cfeval judge` end to end: cohort → synthesize → perturb → infer
//! (controls) → judge; control figures through the rule judge; judge-only
//! reruns that never call a subject; the self-preference guard.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use cfeval_model::testing::{BackgroundServer, ServerConfig};
use cfeval_schema::{JudgmentRow, ShardStore};

use crate::support::{cfeval, workspace_root};

fn ok(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn cfeval_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfeval"));
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run cfeval")
}

/// cohort → synthesize → perturb into `run`.
fn prepare_run(dir: &Path, run: &Path, cases: usize) {
    let cohort_dir = dir.join("cohort");
    let summary = ok(
        cfeval(&[
            "cohort",
            "--cases",
            &cases.to_string(),
            "--seed",
            "0",
            "--out",
            path(&cohort_dir),
        ]),
        "cohort",
    );
    let summary: serde_json::Value = serde_json::from_str(summary.trim()).expect("cohort summary");
    let jsonl = summary["jsonl"].as_str().expect("jsonl path").to_string();
    ok(
        cfeval(&["synthesize", "--input", &jsonl, "--out", path(run)]),
        "synthesize",
    );
    let catalog = workspace_root().join("data/packs/oncology/catalog.yaml");
    ok(
        cfeval(&["perturb", "--run", path(run), "--catalog", path(&catalog)]),
        "perturb",
    );
}

/// `openai/gpt-5.4` answers `families` of `run` from the test server at `url`.
fn infer_served(run: &Path, url: &str, families: &[&str], env: &[(&str, &str)]) {
    let mut args = vec![
        "infer",
        "--run",
        path(run),
        "--subject",
        "openai/gpt-5.4",
        "--base-url",
        url,
    ];
    for family in families {
        args.extend(["--family", family]);
    }
    ok(cfeval_env(&args, env), "infer gpt-5.4");
}

fn path(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn judgments(run: &Path) -> Vec<JudgmentRow> {
    let store = ShardStore::open_table::<JudgmentRow>(run).expect("judgments");
    let mut rows = Vec::new();
    for batch in store.read_rows::<JudgmentRow>().expect("read") {
        rows.extend(batch.expect("batch"));
    }
    rows
}

/// Mean score of ok rows and the row count, per key.
fn means<'a>(
    rows: impl Iterator<Item = &'a JudgmentRow>,
    key: impl Fn(&JudgmentRow) -> String,
) -> BTreeMap<String, (f64, usize)> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for row in rows {
        let Some(score) = row.score else { continue };
        let entry = sums.entry(key(row)).or_default();
        entry.0 += score;
        entry.1 += 1;
    }
    sums.into_iter()
        .map(|(key, (sum, count))| (key, (sum / count as f64, count)))
        .collect()
}

/// Per subject: CSS mean per family (`A`–`E`, `N`), CSS over A–E, and CMS.
struct Figures {
    css: BTreeMap<String, BTreeMap<String, (f64, usize)>>,
    overall: BTreeMap<String, f64>,
    cms: BTreeMap<String, (f64, usize)>,
}

const CONTROLS: [&str; 4] = [
    "control/reference",
    "control/constant",
    "control/blind-surgery",
    "control/erratic",
];

/// The whole chain on the 224-case cohort, controls judged by the rule judge.
fn control_figures() -> Figures {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    prepare_run(dir.path(), &run, 224);
    for subject in CONTROLS {
        ok(
            cfeval(&["infer", "--run", path(&run), "--subject", subject]),
            subject,
        );
    }
    let report = ok(
        cfeval(&["judge", "--run", path(&run), "--judge", "rule"]),
        "judge",
    );
    let report: serde_json::Value = serde_json::from_str(report.trim()).expect("report");
    assert_eq!(report["errors"], 0, "{report}");
    let rows = judgments(&run);
    let mut figures = Figures {
        css: BTreeMap::new(),
        overall: BTreeMap::new(),
        cms: means(rows.iter().filter(|row| row.metric == "cms"), |row| {
            row.subject.clone()
        }),
    };
    for subject in CONTROLS {
        let css = rows
            .iter()
            .filter(|row| row.subject == subject && row.metric == "css");
        figures
            .css
            .insert(subject.into(), means(css.clone(), |row| row.family.clone()));
        let overall = means(css.filter(|row| row.family != "N"), |_| "all".into());
        figures.overall.insert(
            subject.into(),
            overall.get("all").map_or(f64::NAN, |(mean, _)| *mean),
        );
        eprintln!(
            "{subject}: CSS A–E {:.3}; per family {:?}; CMS {:?}",
            figures.overall[subject],
            figures.css[subject],
            figures.cms.get(subject)
        );
    }
    figures
}

fn family(figures: &Figures, subject: &str, family: &str) -> f64 {
    figures.css[subject]
        .get(family)
        .map_or(f64::NAN, |(mean, _)| *mean)
}

#[test]
fn controls_through_the_rule_judge_on_the_224_case_cohort() {
    let figures = control_figures();
    assert_eq!(figures.overall["control/constant"], 0.0, "constant CSS");
    assert_eq!(
        family(&figures, "control/blind-surgery", "D"),
        0.0,
        "blind-surgery on D"
    );
    // Blindness to surgery changes nothing outside family D.
    for name in ["A", "B", "C", "E", "N"] {
        assert_eq!(
            family(&figures, "control/blind-surgery", name),
            family(&figures, "control/reference", name),
            "blind-surgery vs reference on {name}"
        );
    }
    assert!(figures.overall["control/reference"] > figures.overall["control/erratic"]);
    let reference_cms = figures
        .cms
        .get("control/reference")
        .map_or(0.0, |(mean, _)| *mean);
    assert!(reference_cms >= 0.95, "reference CMS {reference_cms}");
    assert_eq!(
        family(&figures, "control/reference", "N"),
        1.0,
        "reference holds on N"
    );
    assert_eq!(
        family(&figures, "control/constant", "N"),
        1.0,
        "constant holds on N"
    );
    let erratic_shift = 1.0 - family(&figures, "control/erratic", "N");
    assert!(erratic_shift >= 0.80, "erratic shifts on {erratic_shift:.3} of N");
}

/// The bar for the reference control: CSS >= 0.98 over A–E, and
/// blind-surgery >= 0.98 outside family D. It holds because the catalog's
/// machine-checkable expectations and the guideline rule table agree: each
/// intervention applies only where its fact is decisive, and the table says
/// what a guideline-following oncologist does there (no surgery for a
/// non-surgical candidate, no repeat of a progressed regimen).
#[test]
fn reference_and_blind_surgery_css_meet_the_bar() {
    let figures = control_figures();
    assert!(
        figures.overall["control/reference"] >= 0.98,
        "reference CSS {}",
        figures.overall["control/reference"]
    );
    for name in ["A", "B", "C", "E"] {
        assert!(
            family(&figures, "control/blind-surgery", name) >= 0.98,
            "blind-surgery on {name}"
        );
    }
}

#[test]
fn judge_only_rerun_calls_no_subject_and_keeps_earlier_judgments() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    prepare_run(dir.path(), &run, 6);
    let key = [
        ("OPENAI_API_KEY", "test-key"),
        ("OPENAI_BASE_URL", url.as_str()),
        ("VLLM_BASE_URL", url.as_str()),
    ];
    infer_served(&run, &url, &["A"], &key);
    ok(
        cfeval(&["infer", "--run", path(&run), "--subject", "control/reference"]),
        "infer reference",
    );
    let subject_calls = server.requests_for_model("gpt-5.4");
    assert!(subject_calls > 0, "infer called the subject");
    ok(
        cfeval(&["judge", "--run", path(&run), "--judge", "rule"]),
        "rule judge",
    );
    let before = judgments(&run);
    assert!(!before.is_empty());

    // The guard: a judge of the subject's family is refused, with no call made.
    let refused = cfeval_env(&["judge", "--run", path(&run), "--judge", "openai/gpt-5"], &key);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("family `openai`")
            && message.contains("openai/gpt-5.4")
            && message.contains("fallback"),
        "{message}"
    );
    assert_eq!(server.requests_for_model("gpt-5"), 0);
    // The rubric judge is held to the same guard.
    let refused = cfeval_env(
        &["judge", "--run", path(&run), "--judge", "rubric:openai/gpt-5"],
        &key,
    );
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("family `openai`"), "{message}");
    assert_eq!(server.requests_for_model("gpt-5"), 0);

    // A new judge from another family: judged with zero subject calls.
    let report = ok(
        cfeval_env(
            &["judge", "--run", path(&run), "--judge", "vllm/judge-model"],
            &key,
        ),
        "llm judge",
    );
    let report: serde_json::Value = serde_json::from_str(report.trim()).expect("report");
    assert!(
        report["pairs"].as_u64().is_some_and(|pairs| pairs > 0),
        "{report}"
    );
    assert!(server.requests_for_model("judge-model") > 0);
    assert_eq!(
        server.requests_for_model("gpt-5.4"),
        subject_calls,
        "no subject call while judging"
    );

    // The same own-family judge with a named fallback is accepted.
    let fallback_env = [
        key[0],
        key[1],
        key[2],
        ("CFEVAL_JUDGE_FALLBACK", "vllm/judge-model"),
    ];
    let report = ok(
        cfeval_env(
            &["judge", "--run", path(&run), "--judge", "openai/gpt-5"],
            &fallback_env,
        ),
        "fallback",
    );
    let report: serde_json::Value = serde_json::from_str(report.trim()).expect("report");
    assert!(
        report["fallback_pairs"].as_u64().is_some_and(|pairs| pairs > 0),
        "{report}"
    );
    assert_eq!(
        server.requests_for_model("gpt-5.4"),
        subject_calls,
        "no subject call while judging"
    );

    let after = judgments(&run);
    let rule_after: Vec<&JudgmentRow> = after.iter().filter(|row| row.judge == "rule").collect();
    assert_eq!(rule_after.len(), before.len());
    assert!(
        before.iter().all(|row| rule_after.contains(&row)),
        "earlier judgments untouched"
    );
    assert!(after.iter().any(|row| row.judge == "vllm/judge-model"));
}

/// Human labels as a workflow: a blinded, stratified sample for raters,
/// two raters' files imported against its key, and the scores carrying
/// judge–human and human–human κ per family and the disputed directions.
#[test]
fn labels_sample_import_and_agreement_in_scores() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    prepare_run(dir.path(), &run, 8);
    infer_served(&run, &url, &["A", "N"], &[("OPENAI_API_KEY", "test-key")]);
    ok(
        cfeval(&["judge", "--run", path(&run), "--judge", "rule"]),
        "judge",
    );
    let sample = dir.path().join("sample");
    let said = ok(
        cfeval(&[
            "labels",
            "sample",
            "--run",
            path(&run),
            "--per-family",
            "3",
            "--seed",
            "5",
            "--out",
            path(&sample),
        ]),
        "labels sample",
    );
    assert!(said.contains("sampled"), "{said}");
    // Blinded: no subject in what raters read; the key has it.
    let for_raters = std::fs::read_to_string(sample.join("sample.csv")).expect("sample.csv");
    // (The test server's answers echo the model's name; the subject's
    // name and mode are nowhere else.)
    let header = for_raters.lines().next().expect("header");
    assert!(
        !header.contains("subject") && !header.contains("mode"),
        "{header}"
    );
    assert!(
        !for_raters.contains("openai/gpt-5.4"),
        "the rater file names the subject"
    );
    assert!(
        std::fs::read_to_string(sample.join("key.csv"))
            .expect("key")
            .contains("openai/gpt-5.4")
    );
    // The same seed gives the same sample; a second sample never overwrites the key.
    let again = cfeval(&[
        "labels",
        "sample",
        "--run",
        path(&run),
        "--per-family",
        "3",
        "--seed",
        "5",
        "--out",
        path(&sample),
    ]);
    assert!(!again.status.success(), "a sample was written over its key");
    let items: Vec<serde_json::Value> = std::fs::read_to_string(sample.join("sample.jsonl"))
        .expect("jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("item"))
        .collect();
    let families: std::collections::BTreeSet<&str> = items
        .iter()
        .map(|item| item["family"].as_str().expect("family"))
        .collect();
    assert_eq!(
        families,
        ["A", "N"].into(),
        "stratified over the families answered"
    );
    assert!(
        items
            .iter()
            .all(|item| !item["variant_answer"].as_str().unwrap_or("").is_empty())
    );
    // Two raters: one CSV, one JSONL; they disagree on one item and the
    // second holds one expected direction clinically wrong.
    let label = |item: &serde_json::Value| if item["family"] == "N" { "held" } else { "ignored" };
    let mut first = String::from("item_id,label,direction_wrong\n");
    let mut second = String::new();
    for (index, item) in items.iter().enumerate() {
        let id = item["item_id"].as_str().expect("id");
        first.push_str(&format!("{id},{},\n", label(item)));
        let first_a = items.iter().position(|item| item["family"] == "A");
        let other = if Some(index) == first_a {
            "updated"
        } else {
            label(item)
        };
        second.push_str(&format!(
            "{}\n",
            serde_json::json!({"item_id": id, "label": other, "direction_wrong": index == 1})
        ));
    }
    let first_file = dir.path().join("ana.csv");
    let second_file = dir.path().join("ben.jsonl");
    std::fs::write(&first_file, first).expect("write");
    std::fs::write(&second_file, second).expect("write");
    let human = run.join("labels/human.csv");
    let said = ok(
        cfeval(&[
            "labels",
            "import",
            "--key",
            path(&sample.join("key.csv")),
            "--out",
            path(&human),
            path(&first_file),
            path(&second_file),
        ]),
        "labels import",
    );
    assert!(said.contains("from 2 raters (ana, ben)"), "{said}");
    // A bad row is named by file and row, and nothing is written.
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "item_id,label\nLnotthere,ignored\n").expect("write");
    let refused = cfeval(&[
        "labels",
        "import",
        "--key",
        path(&sample.join("key.csv")),
        "--out",
        path(&dir.path().join("x.csv")),
        path(&bad),
    ]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stdout);
    assert!(
        message.contains("bad.csv:2") && message.contains("not in the key"),
        "{message}"
    );
    assert!(!dir.path().join("x.csv").exists());

    ok(
        cfeval(&["aggregate", "--run", path(&run), "--human-labels", path(&human)]),
        "aggregate",
    );
    let store = ShardStore::open_table::<cfeval_schema::ScoreRow>(&run).expect("scores");
    let mut rows = Vec::new();
    for batch in store.read_rows::<cfeval_schema::ScoreRow>().expect("read") {
        rows.extend(batch.expect("batch"));
    }
    let find = |judge: &str, metric: &str, group: &str| {
        rows.iter()
            .find(|row| row.judge == judge && row.metric == metric && row.group == group)
            .unwrap_or_else(|| panic!("no {judge} {metric} {group} row"))
    };
    let raters = find("human vs human", "agreement", "N");
    assert!(raters.value > 0.99, "the raters agree on N: {raters:?}");
    let overall = find("human vs human", "agreement", "all");
    assert_eq!(overall.n_tuples, items.len() as u64);
    assert!(overall.value < 1.0, "they disagree on one item: {overall:?}");
    let kappa = find("human vs human", "kappa", "all");
    assert!(kappa.value < 1.0 && kappa.ci_low.is_some(), "{kappa:?}");
    let judge_a = rows
        .iter()
        .find(|row| row.judge == "human vs rule" && row.level == "family" && row.group == "A");
    assert!(judge_a.is_some(), "no judge-human kappa for family A");
    let disputed: f64 = rows
        .iter()
        .filter(|row| row.metric == "direction_disputed_rate")
        .map(|row| row.value * row.n_tuples as f64)
        .sum();
    assert!((disputed - 1.0).abs() < 1e-9, "one label disputes a direction");
}

/// The neutral prompt set is the default and the cued one a named choice;
/// the set is recorded in every response, judgment and subject score row.
#[test]
fn the_prompt_set_is_recorded_from_responses_to_scores() {
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    prepare_run(dir.path(), &run, 6);
    let env = [("OPENAI_API_KEY", "test-key")];
    infer_served(&run, &url, &["A"], &env);
    ok(
        cfeval(&[
            "infer",
            "--run",
            path(&run),
            "--subject",
            "control/reference",
            "--family",
            "A",
            "--prompt-set",
            "cued",
        ]),
        "infer cued",
    );
    // The cued prompt names the decisive facts; the neutral one does not.
    let neutral_prompt = server.last_body().expect("a request")["messages"][0]["content"]
        .as_str()
        .expect("prompt")
        .to_string();
    let instructions = neutral_prompt.split("<chart").next().unwrap_or_default();
    assert!(
        !instructions.contains("biomarkers") && neutral_prompt.contains("<chart>"),
        "{neutral_prompt}"
    );
    let refused = cfeval(&[
        "infer",
        "--run",
        path(&run),
        "--subject",
        "control/reference",
        "--prompt-set",
        "loud",
    ]);
    assert!(!refused.status.success());
    ok(
        cfeval(&["judge", "--run", path(&run), "--judge", "rule"]),
        "judge",
    );
    ok(cfeval(&["aggregate", "--run", path(&run)]), "aggregate");
    let sets = |table: &str| -> std::collections::BTreeSet<(String, String)> {
        let output = ok(
            cfeval(&[
                "show",
                table,
                "--run",
                path(&run),
                "--columns",
                "subject,prompt_set",
            ]),
            "show",
        );
        output
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|row| {
                (
                    row["subject"].as_str().unwrap_or_default().to_string(),
                    row["prompt_set"].as_str().unwrap_or("null").to_string(),
                )
            })
            .collect()
    };
    let expected: std::collections::BTreeSet<(String, String)> = [
        ("control/reference".to_string(), "cued".to_string()),
        ("openai/gpt-5.4".to_string(), "neutral".to_string()),
    ]
    .into();
    assert_eq!(sets("responses"), expected);
    assert_eq!(sets("judgments"), expected);
    let scores = sets("scores");
    assert!(scores.is_superset(&expected), "{scores:?}");
}
