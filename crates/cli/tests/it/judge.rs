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
    let catalog = workspace_root().join("data/catalog/oncology-v1.yaml");
    ok(
        cfeval(&["perturb", "--run", path(run), "--catalog", path(&catalog)]),
        "perturb",
    );
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
    ok(
        cfeval_env(
            &[
                "infer",
                "--run",
                path(&run),
                "--subject",
                "openai/gpt-5.4",
                "--base-url",
                &url,
                "--family",
                "A",
            ],
            &key,
        ),
        "infer gpt-5.4",
    );
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
