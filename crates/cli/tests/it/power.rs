//! `cfeval power` end to end on a small pilot run of control subjects
//! (no model server): `control/reference` against `control/erratic`,
//! paired and against a threshold, and the stated mode. The pilot summary
//! must be what the judgments say when counted here, the negative-control
//! family must not be a row, the power curve must be written as one SVG
//! document, the same inputs must give byte-identical output, and wrong
//! inputs must fail with a message that names what is wrong.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::JudgmentRow;

use crate::support::{catalog, cfeval_in, rows, succeeded};

const REFERENCE: &str = "control/reference";
const ERRATIC: &str = "control/erratic";

/// A pilot run of 30 cases, the reference and the erratic control judged
/// by the rule judge.
fn pilot(dir: &Path) {
    let text = format!(
        r#"[run]
name = "pilot"

[cases]
cohort = {{ cases = 30, seed = 5 }}

[catalog]
path = "{catalog}"

[[subjects]]
name = "{REFERENCE}"

[[subjects]]
name = "{ERRATIC}"

[[judges]]
name = "rule"

[aggregate]
resamples = 50
"#,
        catalog = catalog()
    );
    std::fs::write(dir.join("pilot.toml"), text).expect("write pipeline");
    succeeded(
        cfeval_in(dir, &["run", "pilot.toml", "--run-dir", "runs/pilot"]),
        "cfeval run",
    );
}

/// Decided verdicts by (case, intervention, sample) → (family, score).
type Verdicts = BTreeMap<(String, String, u32), (String, f64)>;

/// The rule judge's decided CSS verdicts of `subject` in the CSS families,
/// and every case it was judged on.
fn decided(run: &Path, subject: &str) -> (Verdicts, BTreeSet<String>) {
    let mut verdicts = BTreeMap::new();
    let mut cases = BTreeSet::new();
    for row in rows::<JudgmentRow>(run) {
        if row.subject != subject || row.metric != "css" || row.judge != "rule" || row.mode != "single_shot" {
            continue;
        }
        if !["A", "B", "C", "D", "E"].contains(&row.family.as_str()) {
            continue;
        }
        cases.insert(row.case_id.clone());
        if row.status == "ok"
            && row.label.as_deref() != Some("uncertain")
            && let Some(score) = row.score
        {
            verdicts.insert((row.case_id, row.intervention, row.sample), (row.family, score));
        }
    }
    (verdicts, cases)
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let stdout = succeeded(cfeval_in(dir, args), "cfeval power");
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}"))
}

fn number(value: &serde_json::Value) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("not a number: {value}"))
}

fn is_svg_document(path: &Path) {
    let svg = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(
        svg.matches("<g").count(),
        svg.matches("</g>").count(),
        "balanced groups"
    );
    assert!(svg.contains("target 0.80") && svg.contains("overall"), "{svg}");
}

#[test]
fn power_plans_from_a_pilot_run_and_from_a_stated_effect() {
    let dir = tempfile::tempdir().expect("tempdir");
    pilot(dir.path());
    let run = dir.path().join("runs/pilot");
    let run_arg = run.display().to_string();

    // Paired: erratic − reference.
    let paired = [
        "power",
        "--run",
        &run_arg,
        "--subject",
        REFERENCE,
        "--subject",
        ERRATIC,
        "--simulations",
        "400",
        "--json",
        "--out",
        "paired.svg",
    ];
    let plan = json(dir.path(), &paired);
    assert_eq!(plan["design"], "paired");
    assert_eq!(plan["subjects"], serde_json::json!([REFERENCE, ERRATIC]));
    assert_eq!(plan["difference_from"], "pilot");
    is_svg_document(&dir.path().join("paired.svg"));
    assert_eq!(plan["svg"], "paired.svg");

    // The pilot, counted here: tuples both subjects decided, B − A.
    let (reference, reference_cases) = decided(&run, REFERENCE);
    let (erratic, erratic_cases) = decided(&run, ERRATIC);
    let matched: Vec<(&String, f64, f64)> = reference
        .iter()
        .filter_map(|(key, (family, a))| erratic.get(key).map(|(_, b)| (family, *a, *b)))
        .collect();
    assert!(matched.len() > 20, "{} matched tuples", matched.len());
    let cases = reference_cases.intersection(&erratic_cases).count() as u64;
    assert_eq!(plan["pilot_cases"], cases);
    let rows = plan["rows"].as_array().expect("rows");
    let overall = &rows[0];
    assert_eq!(
        (overall["level"].as_str(), overall["group"].as_str()),
        (Some("overall"), Some("all"))
    );
    assert_eq!(overall["pilot"]["tuples"], matched.len() as u64);
    let difference = matched.iter().map(|(_, a, b)| b - a).sum::<f64>() / matched.len() as f64;
    assert!((number(&overall["pilot"]["difference"]) - difference).abs() < 1e-12);
    assert!((number(&overall["difference"]) - difference).abs() < 1e-12);
    let families: BTreeSet<&str> = matched.iter().map(|(family, ..)| family.as_str()).collect();
    let groups: BTreeSet<&str> = rows[1..].iter().filter_map(|row| row["group"].as_str()).collect();
    assert_eq!(groups, families, "a row per CSS family with decided tuples");
    assert!(!groups.contains("N"), "the negative control is not CSS");
    for (family, row) in families.iter().zip(&rows[1..]) {
        let of_family: Vec<f64> = matched
            .iter()
            .filter(|(name, ..)| name.as_str() == *family)
            .map(|(_, a, b)| b - a)
            .collect();
        assert_eq!(row["pilot"]["tuples"], of_family.len() as u64, "family {family}");
        let mean = of_family.iter().sum::<f64>() / of_family.len() as f64;
        assert!(
            (number(&row["pilot"]["difference"]) - mean).abs() < 1e-12,
            "family {family}"
        );
    }
    // The reference is right everywhere and the erratic control is not: a
    // large difference, a few cases.
    assert!(difference < -0.3, "{difference}");
    let needed = overall["cases"].as_u64().expect("reached");
    assert!((2..=100).contains(&needed), "{overall}");
    assert_eq!(overall["reached"], true);
    assert!(number(&overall["power"]) >= 0.8);
    assert!(overall["curve"].as_array().expect("curve").len() >= 10);

    // The same inputs and seed: byte-identical output and curve.
    let again = succeeded(cfeval_in(dir.path(), &paired), "cfeval power");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&again).expect("JSON"),
        plan
    );
    let first_svg = std::fs::read(dir.path().join("paired.svg")).expect("svg");
    succeeded(cfeval_in(dir.path(), &paired), "cfeval power");
    assert_eq!(
        std::fs::read(dir.path().join("paired.svg")).expect("svg"),
        first_svg
    );

    // Threshold, as a table, the curve into the run by default.
    let table = succeeded(
        cfeval_in(
            dir.path(),
            &[
                "power",
                "--run",
                &run_arg,
                "--subject",
                ERRATIC,
                "--threshold",
                "0.5",
                "--difference",
                "-0.2",
                "--simulations",
                "300",
            ],
        ),
        "cfeval power --threshold",
    );
    assert!(
        table.starts_with("cfeval power: threshold design, CSS of control/erratic − 0.5"),
        "{table}"
    );
    for expected in [
        "scope",
        "overall",
        "family ",
        "verified",
        "type I",
        "normal",
        "power curve: ",
    ] {
        assert!(table.contains(expected), "{expected}: {table}");
    }
    assert!(!table.contains("family N"), "{table}");
    is_svg_document(&run.join("power.svg"));

    // Stated mode: the curve into the current folder.
    let stated = json(
        dir.path(),
        &[
            "power",
            "--difference",
            "0.1",
            "--sd",
            "0.3",
            "--simulations",
            "300",
            "--json",
        ],
    );
    assert_eq!(stated["design"], "stated");
    let row = &stated["rows"][0];
    assert_eq!(row["normal_cases"], 71);
    assert!(
        (55..=90).contains(&row["cases"].as_u64().expect("reached")),
        "{row}"
    );
    is_svg_document(&dir.path().join("power.svg"));
}

#[test]
fn wrong_inputs_fail_naming_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    pilot(dir.path());
    let run = dir.path().join("runs/pilot").display().to_string();
    let fails = |args: &[&str], expected: &str| {
        let output = cfeval_in(dir.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    };
    let base = ["power", "--run", run.as_str()];
    let with = |extra: &[&'static str]| -> Vec<String> {
        base.iter()
            .copied()
            .chain(extra.iter().copied())
            .map(String::from)
            .collect()
    };
    let check = |extra: &[&'static str], expected: &str| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, expected);
    };
    check(
        &["--subject", REFERENCE, "--subject", "vllm/nobody"],
        "subject `vllm/nobody` has no CSS judgments of judge `rule` in mode `single_shot`",
    );
    check(&["--subject", REFERENCE], "needs --threshold T");
    check(&[], "--run needs --subject");
    check(
        &["--subject", REFERENCE, "--subject", ERRATIC, "--difference", "0"],
        "nothing to detect",
    );
    check(
        &["--subject", REFERENCE, "--subject", ERRATIC, "--power", "1.5"],
        "power 1.5 is not in (0, 1)",
    );
    check(
        &["--subject", REFERENCE, "--subject", ERRATIC, "--alpha", "0"],
        "alpha 0 is not in (0, 1)",
    );
    check(
        &[
            "--subject",
            REFERENCE,
            "--subject",
            ERRATIC,
            "--judge",
            "openai/gpt-5",
        ],
        "judge `openai/gpt-5` has no judgments",
    );
    check(
        &["--subject", REFERENCE, "--subject", ERRATIC, "--mode", "agent"],
        "no CSS judgments of judge `rule` in mode `agent` (its modes: single_shot)",
    );
    check(
        &["--subject", REFERENCE, "--subject", REFERENCE],
        "two different subjects",
    );
    check(
        &["--subject", REFERENCE, "--threshold", "1.5"],
        "threshold 1.5 is not on the CSS scale",
    );
    check(
        &["--subject", REFERENCE, "--subject", ERRATIC, "--sd", "0.2"],
        "--sd is for the stated mode",
    );
    fails(
        &["power", "--difference", "0.1"],
        "without --run, give --difference D and --sd S",
    );
    fails(
        &["power", "--difference", "0.1", "--sd", "-1"],
        "sd -1 is not a positive number",
    );
    fails(
        &[
            "power",
            "--difference",
            "0.1",
            "--sd",
            "0.2",
            "--subject",
            REFERENCE,
        ],
        "--subject read a pilot run",
    );
    let missing = dir.path().join("runs/none").display().to_string();
    fails(
        &[
            "power",
            "--run",
            &missing,
            "--subject",
            REFERENCE,
            "--threshold",
            "0.5",
        ],
        "failed to plan from the pilot run",
    );
}

/// The dry-run's `[power]` rows: (scope, cases needed, power with the
/// run's cases), and the number of cases the run has.
fn dry_run_power(stdout: &str) -> (u64, Vec<(String, String, String)>) {
    let mut lines = stdout
        .lines()
        .skip_while(|line| !line.starts_with("power: "))
        .skip(1);
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no [power] block in\n{stdout}"));
    let cases = header
        .split("power with ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" cases"))
        .and_then(|cases| cases.parse().ok())
        .unwrap_or_else(|| panic!("no case count in `{header}`"));
    let rows = lines
        .take_while(|line| !line.trim_start().starts_with("this run's"))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (scope, rest) = if words[0] == "family" {
                (format!("family {}", words[1]), &words[2..])
            } else {
                (words[0].to_string(), &words[1..])
            };
            // detect, sd, cases needed, then the power.
            (scope, rest[2].to_string(), rest[3..].join(" "))
        })
        .collect();
    (cases, rows)
}

#[test]
fn the_dry_run_shows_the_cases_needed_and_the_power_of_its_own_cases() {
    let dir = tempfile::tempdir().expect("tempdir");
    pilot(dir.path());
    let study = |power: &str| {
        format!(
            r#"[run]
name = "study"
seed = 3

[cases]
cohort = {{ cases = 20, seed = 8 }}

[catalog]
path = "{catalog}"

[[subjects]]
name = "{REFERENCE}"

[[judges]]
name = "rule"

[power]
{power}
simulations = 400
"#,
            catalog = catalog()
        )
    };
    let dry_run = |text: String| {
        std::fs::write(dir.path().join("study.toml"), text).expect("write pipeline");
        let output = cfeval_in(
            dir.path(),
            &["run", "study.toml", "--run-dir", "runs/study", "--dry-run"],
        );
        succeeded(output, "cfeval run --dry-run")
    };

    // From the pilot: the same plan as `cfeval power --cases N` with the
    // pipeline's seed, scope by scope.
    let stdout = dry_run(study(&format!(
        "pilot = \"runs/pilot\"\nsubjects = [\"{REFERENCE}\", \"{ERRATIC}\"]"
    )));
    let (cases, rows) = dry_run_power(&stdout);
    assert_eq!(cases, 20, "{stdout}");
    let run = dir.path().join("runs/pilot").display().to_string();
    let plan = json(
        dir.path(),
        &[
            "power",
            "--run",
            &run,
            "--subject",
            REFERENCE,
            "--subject",
            ERRATIC,
            "--simulations",
            "400",
            "--seed",
            "3",
            "--cases",
            "20",
            "--json",
            "--out",
            "study.svg",
        ],
    );
    let planned = plan["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), planned.len(), "{stdout}");
    for (printed, row) in rows.iter().zip(planned) {
        let scope = if row["level"] == "family" {
            format!("family {}", row["group"].as_str().expect("group"))
        } else {
            "overall".to_string()
        };
        assert_eq!(printed.0, scope, "{stdout}");
        assert_eq!(printed.1, row["cases"].as_u64().expect("reached").to_string());
        let power = format!(
            "{:.3} ± {:.3}",
            number(&row["planned_power"]),
            number(&row["planned_se"])
        );
        assert!(
            printed.2.starts_with(&power),
            "{scope}: {} against {power}",
            printed.2
        );
        let over_rejects = number(&row["planned_type_i_error"]) > number(&plan["max_type_i_error"]);
        assert_eq!(
            printed.2.contains("over-rejects"),
            over_rejects,
            "{scope}: {}",
            printed.2
        );
    }
    let short: Vec<&(String, String, String)> = rows
        .iter()
        .filter(|row| row.1.parse::<u64>().expect("needed") > cases)
        .collect();
    let verdict = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("this run's"))
        .expect("verdict line");
    if short.is_empty() {
        assert!(
            verdict.contains("reach the target power in every scope"),
            "{verdict}"
        );
    } else {
        for row in short {
            assert!(verdict.contains(&format!("{} ({})", row.0, row.1)), "{verdict}");
        }
    }

    // Stated: 20 cases are far too few for 0.1 with SD 0.4 (≈ 126 needed;
    // power ≈ Φ(0.25 · √20 − 1.96) ≈ 0.20).
    let stdout = dry_run(study("difference = 0.1\nsd = 0.4"));
    assert!(
        stdout.contains("power: stated effect (difference +0.1, sd 0.4)"),
        "{stdout}"
    );
    let (_, rows) = dry_run_power(&stdout);
    assert_eq!(rows.len(), 1, "{stdout}");
    let needed: u64 = rows[0].1.parse().expect("needed");
    assert!((115..=145).contains(&needed), "{stdout}");
    let power: f64 = rows[0]
        .2
        .split(' ')
        .next()
        .and_then(|power| power.parse().ok())
        .expect("power");
    assert!((0.12..=0.28).contains(&power), "{stdout}");
    assert!(
        stdout.contains(&format!("fall short of the target power in: overall ({needed})")),
        "{stdout}"
    );
    // The dry-run writes no curve.
    assert!(!dir.path().join("runs/study/power.svg").exists());
}
