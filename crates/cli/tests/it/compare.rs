//! `cfeval compare` end to end: two runs of one cohort and catalog, the same
//! model name served by two test servers. Run A's server answers every
//! chart as the guideline reference would; run B's does too, except that on
//! a chart whose surgery status was changed (family D) it ignores the change
//! and gives the case's baseline plan. Exactly the family D tuples that run
//! A got (partly) right must come out `regressed`, family D's difference
//! must have an interval below 0 and every other family's must hold 0;
//! the counts and McNemar p-values must be what the judgments say when
//! counted here. A run judged under another catalog, and one made with
//! another pack, are refused with the reason.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{ComparisonRow, JudgmentRow, ShardStore, Table, VariantRow};

use crate::support::{catalog, cfeval, rows, succeeded, workspace_root};

const MODEL: &str = "compare-model";
const SURGERY_FAMILY: &str = "D";

/// A run's variants: rendered chart → (case, family, reference answer).
type Charts = Vec<(String, String, String, String)>;

fn load_charts(run: &Path) -> Charts {
    let guidelines = cfeval_guidelines::Guidelines::builtin().expect("guidelines");
    let reference =
        cfeval_infer::control::Control::parse("control/reference", guidelines).expect("reference");
    let store = ShardStore::open_existing(
        &run.join(VariantRow::NAME),
        VariantRow::NAME,
        VariantRow::schema(),
    )
    .expect("variants")
    .expect("the variants exist before infer");
    let mut charts = Vec::new();
    for batch in store.read_rows::<VariantRow>().expect("read") {
        for variant in batch.expect("batch") {
            charts.push((
                cfeval_infer::prompt::render_chart(&variant.sections),
                variant.case_id.clone(),
                variant.family.clone(),
                reference.answer_variant(&variant),
            ));
        }
    }
    charts
}

/// A server that answers like the reference; with `ignore_surgery`, a
/// family D chart gets its case's baseline answer.
fn server(run: PathBuf, ignore_surgery: bool) -> BackgroundServer {
    let charts: Arc<OnceLock<Charts>> = Arc::new(OnceLock::new());
    let responder: Responder = Arc::new(move |_model: &str, prompt: &str, _seed: Option<u64>| {
        let charts = charts.get_or_init(|| load_charts(&run));
        let Some((_, case, family, answer)) = charts
            .iter()
            .filter(|(chart, ..)| prompt.contains(chart.as_str()))
            .max_by_key(|(chart, ..)| chart.len())
        else {
            return "Recommendation: no chart found.".to_string();
        };
        if ignore_surgery && family == SURGERY_FAMILY {
            let baseline = charts
                .iter()
                .find(|(_, other, family, _)| other == case && family == "baseline")
                .expect("the case's baseline");
            return baseline.3.clone();
        }
        answer.clone()
    });
    BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("test server")
}

fn write_pipeline(dir: &Path, name: &str, url: &str, with_control: bool) -> PathBuf {
    write_pipeline_with(dir, name, url, with_control, &catalog())
}

fn write_pipeline_with(dir: &Path, name: &str, url: &str, with_control: bool, catalog: &str) -> PathBuf {
    let control = if with_control {
        "[[subjects]]\nname = \"control/reference\"\n"
    } else {
        ""
    };
    let text = format!(
        r#"[run]
name = "{name}"

[cases]
cohort = {{ cases = 24, seed = 11 }}

[catalog]
path = "{catalog}"

[[subjects]]
name = "vllm/{MODEL}"
base-url = "{url}"
max-tokens = 256

{control}
[[judges]]
name = "rule"

[aggregate]
resamples = 50
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write pipeline");
    path
}

fn run_pipeline(dir: &Path, pipeline: &Path, run: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .current_dir(dir)
        .arg("run")
        .arg(pipeline)
        .args(["--run-dir", run])
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL")
        .output()
        .expect("cfeval run");
    succeeded(output, "cfeval run");
}

/// The rule judge's decided CSS verdicts of the model, by (case, intervention).
fn verdicts(run: &Path) -> BTreeMap<(String, String), (String, f64)> {
    rows::<JudgmentRow>(run)
        .into_iter()
        .filter(|row| {
            row.subject == format!("vllm/{MODEL}")
                && row.metric == "css"
                && row.judge == "rule"
                && row.sample == 0
                && row.status == "ok"
                && row.label.as_deref() != Some("uncertain")
        })
        .filter_map(|row| Some(((row.case_id, row.intervention), (row.family, row.score?))))
        .collect()
}

fn comparison_rows(folder: &Path) -> Vec<ComparisonRow> {
    let store = ShardStore::open_existing(
        &folder.join(ComparisonRow::NAME),
        ComparisonRow::NAME,
        ComparisonRow::schema(),
    )
    .expect("comparison table")
    .expect("the comparison table exists");
    let mut out = Vec::new();
    for batch in store.read_rows::<ComparisonRow>().expect("read") {
        out.extend(batch.expect("batch"));
    }
    out
}

#[test]
fn compare_finds_exactly_the_regressed_family() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run_a, run_b) = (dir.path().join("runs/a"), dir.path().join("runs/b"));
    let server_a = server(run_a.clone(), false);
    let server_b = server(run_b.clone(), true);
    let pipeline_a = write_pipeline(dir.path(), "a", &server_a.openai_base_url(), true);
    let pipeline_b = write_pipeline(dir.path(), "b", &server_b.openai_base_url(), false);
    run_pipeline(dir.path(), &pipeline_a, "runs/a");
    run_pipeline(dir.path(), &pipeline_b, "runs/b");

    let stdout = succeeded(
        cfeval(&[
            "compare",
            &run_a.display().to_string(),
            &run_b.display().to_string(),
            "--resamples",
            "2000",
        ]),
        "cfeval compare",
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("JSON summary");
    let folder = run_b.join("compare-a");
    assert!(folder.join("comparison.md").is_file() && folder.join("comparison.html").is_file());
    let page = std::fs::read_to_string(folder.join("comparison.html")).expect("html");
    assert!(page.contains("<svg") && page.contains("family D"), "{page}");
    let table = comparison_rows(&folder);

    // The tuples, counted here from the two runs' judgments.
    let (a, b) = (verdicts(&run_a), verdicts(&run_b));
    let matched: Vec<(&(String, String), &String, f64, f64)> = a
        .iter()
        .filter_map(|(key, (family, score_a))| {
            b.get(key).map(|(_, score_b)| (key, family, *score_a, *score_b))
        })
        .collect();
    let regressed: BTreeSet<(String, String)> = matched
        .iter()
        .filter(|(.., score_a, score_b)| score_b < score_a)
        .map(|(key, ..)| (*key).clone())
        .collect();
    assert!(regressed.len() >= 3, "{} regressed tuples", regressed.len());
    for (key, family, score_a, score_b) in &matched {
        if family.as_str() == SURGERY_FAMILY {
            assert!(score_b <= score_a, "{key:?}: B ignores the surgery change");
        } else {
            assert_eq!(
                score_a, score_b,
                "{key:?}: outside family D, A and B answer alike"
            );
        }
    }
    let listed: BTreeSet<(String, String)> = table
        .iter()
        .filter(|row| row.level == "tuple" && row.metric == "regressed")
        .map(|row| {
            assert_eq!(row.group, SURGERY_FAMILY, "{row:?}");
            (
                row.case_id.clone().expect("case"),
                row.intervention.clone().expect("intervention"),
            )
        })
        .collect();
    assert_eq!(listed, regressed, "exactly the family D tuples regress");
    assert_eq!(summary["regressed"], regressed.len() as u64);
    assert_eq!(summary["only_a"], 0);
    assert_eq!(summary["only_b"], 0);

    // control/reference is only in run A: listed, not compared.
    let one_sided: Vec<&ComparisonRow> = table.iter().filter(|row| row.level == "subject").collect();
    assert_eq!(one_sided.len(), 1, "{one_sided:?}");
    assert_eq!(
        (one_sided[0].subject.as_str(), one_sided[0].metric.as_str()),
        ("control/reference", "only_a")
    );
    assert!(one_sided[0].n_tuples > 0);

    // Per family: only D's interval excludes 0; counts and McNemar as counted here.
    let families: HashMap<(&str, &str), &ComparisonRow> = table
        .iter()
        .filter(|row| row.level == "family")
        .map(|row| ((row.metric.as_str(), row.group.as_str()), row))
        .collect();
    assert!(families.contains_key(&("spurious_shift", "N")), "{families:?}");
    for ((metric, family), row) in &families {
        let (low, high) = (row.ci_low.expect("low"), row.ci_high.expect("high"));
        if *family == SURGERY_FAMILY {
            assert!(high < 0.0, "family D: [{low}, {high}]");
            assert!(row.difference.expect("difference") < 0.0);
        } else {
            assert!(low <= 0.0 && 0.0 <= high, "{metric} {family}: [{low}, {high}]");
            assert_eq!((row.fixed, row.regressed), (0, 0), "{metric} {family}");
        }
        let own: Vec<_> = matched
            .iter()
            .filter(|(_, f, ..)| f.as_str() == *family)
            .collect();
        assert_eq!(row.n_tuples, own.len() as u64, "{metric} {family}");
        let lost = own.iter().filter(|(.., x, y)| *x == 1.0 && *y != 1.0).count() as u64;
        let gained = own.iter().filter(|(.., x, y)| *x != 1.0 && *y == 1.0).count() as u64;
        let p = cfeval_aggregate::stats::mcnemar_exact(lost, gained);
        assert!((row.mcnemar_p.expect("p") - p).abs() < 1e-12, "{metric} {family}");
        if *family == SURGERY_FAMILY {
            assert!(lost > 0 && gained == 0);
            let mean = |pick: fn(&f64, &f64) -> f64| {
                own.iter().map(|(.., x, y)| pick(x, y)).sum::<f64>() / own.len() as f64
            };
            assert!((row.a_value.expect("a") - mean(|x, _| *x)).abs() < 1e-12);
            assert!((row.b_value.expect("b") - mean(|_, y| *y)).abs() < 1e-12);
        }
    }

    // --subject and --out: only the model, into the folder named.
    let chosen = dir.path().join("chosen");
    let subject = format!("vllm/{MODEL}");
    succeeded(
        cfeval(&[
            "compare",
            &run_a.display().to_string(),
            &run_b.display().to_string(),
            "--subject",
            &subject,
            "--resamples",
            "200",
            "--out",
            &chosen.display().to_string(),
        ]),
        "cfeval compare --subject",
    );
    let chosen_rows = comparison_rows(&chosen);
    assert!(chosen_rows.iter().all(|row| row.subject == subject));
    assert_eq!(
        chosen_rows.iter().filter(|row| row.metric == "regressed").count(),
        regressed.len()
    );
    let output = cfeval(&[
        "compare",
        &run_a.display().to_string(),
        &run_b.display().to_string(),
        "--subject",
        "vllm/nobody",
    ]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("`vllm/nobody` has no judgments in either run"));

    // A run judged under another catalog (one comment added) is refused.
    let edited = dir.path().join("catalog.yaml");
    let text = std::fs::read_to_string(catalog()).expect("catalog");
    std::fs::write(&edited, format!("# edited\n{text}")).expect("write catalog");
    let pipeline_c = write_pipeline_with(
        dir.path(),
        "c",
        &server_a.openai_base_url(),
        false,
        &edited.display().to_string(),
    );
    run_pipeline(dir.path(), &pipeline_c, "runs/c");
    let output = cfeval(&[
        "compare",
        &run_a.display().to_string(),
        &dir.path().join("runs/c").display().to_string(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot be compared: the runs were judged under different catalogs"),
        "{stderr}"
    );
    assert!(!dir.path().join("runs/c/compare-a").exists());

    // A run made with another pack is refused, and nothing is written.
    let other = dir.path().join("runs/other");
    copy_dir(&run_b, &other);
    std::fs::remove_dir_all(other.join("compare-a")).expect("remove the copied comparison");
    std::fs::remove_file(other.join("pack.json")).expect("remove the copied pack record");
    cfeval_schema::pack::Pack::load(&workspace_root().join("data/packs/general-medicine"))
        .expect("pack")
        .record(&other)
        .expect("record");
    let output = cfeval(&[
        "compare",
        &run_a.display().to_string(),
        &other.display().to_string(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot be compared") && stderr.contains("general-medicine"),
        "{stderr}"
    );
    assert!(!other.join("compare-a").exists());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
