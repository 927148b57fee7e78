//! The bad-input catalogue (issue #14): distinct bad cases, catalogs and
//! pipelines, each with the message it must get. A bad case becomes a
//! quarantine row naming its file and line while `cfeval synthesize` exits 0;
//! a bad catalog or pipeline makes `cfeval catalog check` / `cfeval run`
//! exit non-zero with `file:line` and what is wrong. Nothing panics. The
//! damaged runs of `corruption.rs` (39 kinds) count as well: the total is
//! printed.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::workspace_root;

fn cfeval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run cfeval")
}

fn no_panic(output: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{what} panicked:\n{stderr}");
}

const TEXT: &str = "Pathology: invasive ductal carcinoma. Biomarkers: ER positive, HER2 negative.";

/// Bad cases: (file name, content, line of the quarantine row, message).
fn bad_cases() -> Vec<(&'static str, Vec<u8>, Option<u64>, &'static str)> {
    let ok = |id: &str| serde_json::json!({"id": id, "text": TEXT}).to_string();
    let jsonl = |line: &str| format!("{}\n{line}\n", ok("good")).into_bytes();
    let csv = |rows: &str| format!("id,text\ngood,\"{TEXT}\"\n{rows}").into_bytes();
    let osce = |body: &str| format!("{{\"OSCE_Examination\":{body}}}\n").into_bytes();
    vec![
        (
            "text-null.jsonl",
            jsonl(r#"{"id":"x","text":null}"#),
            Some(2),
            "field `text` is null",
        ),
        (
            "text-number.jsonl",
            jsonl(r#"{"id":"x","text":12345}"#),
            Some(2),
            "field `text` is a number (12345)",
        ),
        (
            "text-array.jsonl",
            jsonl(r#"{"id":"x","text":["a","b"]}"#),
            Some(2),
            "field `text` is an array",
        ),
        (
            "text-object.jsonl",
            jsonl(r#"{"id":"x","text":{"a":1}}"#),
            Some(2),
            "field `text` is an object",
        ),
        (
            "text-bool.jsonl",
            jsonl(r#"{"id":"x","text":true}"#),
            Some(2),
            "field `text` is a boolean",
        ),
        (
            "text-empty.jsonl",
            jsonl(r#"{"id":"x","text":""}"#),
            Some(2),
            "the case text is empty",
        ),
        (
            "text-blank.jsonl",
            jsonl(r#"{"id":"x","text":"  \n "}"#),
            Some(2),
            "the case text is empty",
        ),
        (
            "note-number.jsonl",
            jsonl(r#"{"id":"x","note":7}"#),
            Some(2),
            "field `note` is a number",
        ),
        (
            "id-null.jsonl",
            jsonl(r#"{"id":null,"text":"HPI"}"#),
            Some(2),
            "field `id` is null",
        ),
        (
            "id-array.jsonl",
            jsonl(r#"{"id":["a"],"text":"HPI"}"#),
            Some(2),
            "field `id` is an array",
        ),
        (
            "id-float.jsonl",
            jsonl(r#"{"id":1.5,"text":"HPI"}"#),
            Some(2),
            "field `id` is a number (1.5)",
        ),
        (
            "id-empty.jsonl",
            jsonl(r#"{"id":"","text":"HPI"}"#),
            Some(2),
            "a case id must be a non-empty string",
        ),
        (
            "case-id-bool.jsonl",
            jsonl(r#"{"case_id":false,"text":"HPI"}"#),
            Some(2),
            "field `case_id` is a boolean",
        ),
        (
            "section-number.jsonl",
            jsonl(r#"{"id":"x","staging":5}"#),
            Some(2),
            "field `staging` is a number",
        ),
        (
            "section-array.jsonl",
            jsonl(r#"{"id":"x","pathology":["IDC"]}"#),
            Some(2),
            "field `pathology` is an array",
        ),
        (
            "section-object.jsonl",
            jsonl(r#"{"id":"x","labs":{"a":1}}"#),
            Some(2),
            "field `labs` is an object",
        ),
        (
            "diagnosis-object.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","diagnosis":{"a":1}}"#),
            Some(2),
            "field `diagnosis` is an object",
        ),
        (
            "diagnosis-number.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","diagnosis":3}"#),
            Some(2),
            "field `diagnosis` is a number",
        ),
        (
            "rules-number.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","rules":3}"#),
            Some(2),
            "field `rules` is a number",
        ),
        (
            "rules-items.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","rules":[1]}"#),
            Some(2),
            "each rule must be a string",
        ),
        (
            "consensus-number.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","consensus":3}"#),
            Some(2),
            "consensus is a number, not a list",
        ),
        (
            "consensus-weight.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","consensus":[{"text":"a","weight":-1}]}"#),
            Some(2),
            "must be a positive number",
        ),
        (
            "consensus-item.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","consensus":[3]}"#),
            Some(2),
            "a consensus item is a number",
        ),
        (
            "facts-string.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","facts":"no"}"#),
            Some(2),
            "facts must be a JSON list",
        ),
        (
            "facts-missing.jsonl",
            jsonl(r#"{"id":"x","text":"HPI","facts":[{"kind":"a"}]}"#),
            Some(2),
            "fact 1 has no `name`",
        ),
        (
            "no-text.jsonl",
            jsonl(r#"{"id":"x","site":"A"}"#),
            Some(2),
            "no case text",
        ),
        (
            "line-number.jsonl",
            jsonl("12345"),
            Some(2),
            "expected a JSON object, found a number",
        ),
        (
            "line-array.jsonl",
            jsonl(r#"["a","b"]"#),
            Some(2),
            "expected a JSON object, found an array",
        ),
        (
            "line-string.jsonl",
            jsonl(r#""text""#),
            Some(2),
            "expected a JSON object, found a string",
        ),
        (
            "line-null.jsonl",
            jsonl("null"),
            Some(2),
            "expected a JSON object, found null",
        ),
        (
            "malformed.jsonl",
            jsonl(r#"{"id":"x","text":"HPI"#),
            Some(2),
            "malformed JSON",
        ),
        (
            "trailing.jsonl",
            jsonl(r#"{"id":"x","text":"HPI"} x"#),
            Some(2),
            "malformed JSON",
        ),
        (
            "bad-utf8.jsonl",
            [jsonl("").as_slice(), b"{\"id\":\"x\",\"text\":\"\xff\"}\n"].concat(),
            Some(3),
            "not valid UTF-8",
        ),
        (
            "dup.jsonl",
            format!("{}\n{}\n", ok("d"), ok("d")).into_bytes(),
            Some(1),
            "duplicate case `d`: also at",
        ),
        (
            "osce-actor-number.jsonl",
            osce(r#"{"Objective_for_Doctor":"Dx","Patient_Actor":5}"#),
            Some(1),
            "`OSCE_Examination.Patient_Actor` is a number (5), not an object",
        ),
        (
            "osce-tests-array.jsonl",
            osce(r#"{"Objective_for_Doctor":"Dx","Test_Results":["x"]}"#),
            Some(1),
            "`OSCE_Examination.Test_Results` is an array",
        ),
        (
            "osce-exam-null.jsonl",
            osce(r#"{"Objective_for_Doctor":"Dx","Physical_Examination_Findings":null}"#),
            Some(1),
            "`OSCE_Examination.Physical_Examination_Findings` is null",
        ),
        (
            "osce-objective-number.jsonl",
            osce(r#"{"Objective_for_Doctor":1,"Patient_Actor":{"History":"x"}}"#),
            Some(1),
            "`OSCE_Examination.Objective_for_Doctor` is a number",
        ),
        (
            "osce-diagnosis-array.jsonl",
            osce(
                r#"{"Objective_for_Doctor":"Dx","Patient_Actor":{"History":"x"},"Correct_Diagnosis":["a"]}"#,
            ),
            Some(1),
            "`OSCE_Examination.Correct_Diagnosis` is an array",
        ),
        (
            "osce-empty.jsonl",
            osce(r#"{"Correct_Diagnosis":"TB"}"#),
            Some(1),
            "holds no case text",
        ),
        (
            "csv-open-quote.csv",
            csv("x,\"never closed\ny,HPI\n"),
            Some(3),
            "the quoted field opened on line 3 is never closed",
        ),
        (
            "csv-stray-quote.csv",
            csv("x,\"a\"b\n"),
            Some(3),
            "`b` follows the closing quote",
        ),
        (
            "csv-broken-later.csv",
            csv("x,\"open\ny,HPI\nz,\"q\" r\n"),
            Some(3),
            "is not closed properly",
        ),
        (
            "csv-too-many.csv",
            csv("x,a,b\n"),
            Some(3),
            "3 fields where the header has 2 columns",
        ),
        (
            "csv-too-few.csv",
            csv("x\n"),
            Some(3),
            "1 fields where the header has 2 columns",
        ),
        (
            "csv-multiline-fields.csv",
            csv("x,\"a\nb\",c\n"),
            Some(3),
            "the record spans lines 3–4",
        ),
        ("csv-empty-text.csv", csv("x,\n"), Some(3), "no case text"),
        (
            "csv-bad-utf8.csv",
            [csv("").as_slice(), b"x,caf\xe9\n"].concat(),
            Some(3),
            "not valid UTF-8",
        ),
        (
            "csv-dup.csv",
            csv(&format!("good,\"{TEXT}\"\n")),
            Some(2),
            "duplicate case `good`",
        ),
        (
            "csv-no-text-column.csv",
            b"id,notes\n1,x\n".to_vec(),
            Some(1),
            "missing a `text` column",
        ),
        ("csv-header-only.csv", b"".to_vec(), None, "empty file"),
        ("empty.txt", b"".to_vec(), None, "empty file"),
        ("blank.jsonl", b"\n  \n".to_vec(), None, "empty file"),
        (
            "latin1.txt",
            b"Pathology: caf\xe9\n".to_vec(),
            Some(1),
            "not valid UTF-8",
        ),
        (
            "big.jsonl",
            jsonl(&format!("{{\"id\":\"big\",\"text\":\"{}\"}}", "x".repeat(5000))),
            Some(2),
            "over the limit of 4096 bytes per case (raise it with --max-case-bytes",
        ),
        ("big.txt", "x".repeat(5000).into_bytes(), None, "--max-case-bytes"),
        (
            "big-quoted.csv",
            csv(&format!("x,\"{}\n{}\"\n", "y".repeat(3000), "z".repeat(3000))),
            Some(3),
            "reaches",
        ),
    ]
}

#[test]
fn bad_cases_are_quarantined_with_file_line_and_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = bad_cases();
    let mut failures = Vec::new();
    for (index, (name, content, line, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(name);
        std::fs::write(&file, content).expect("write");
        let run = dir.path().join(format!("run-{index}"));
        let output = cfeval(&[
            "synthesize",
            "--input",
            file.to_str().expect("utf-8"),
            "--out",
            run.to_str().expect("utf-8"),
            "--max-case-bytes",
            "4096",
        ]);
        no_panic(&output, name);
        if !output.status.success() {
            failures.push(format!(
                "{name}: exit {:?}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
            continue;
        }
        let shown = cfeval(&["show", "cases_quarantine", "--run", run.to_str().expect("utf-8")]);
        let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&shown.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let found = rows.iter().any(|row| {
            row["source_path"]
                .as_str()
                .is_some_and(|path| path.ends_with(name))
                && row["source_line"].as_u64() == *line
                && row["reason"]
                    .as_str()
                    .is_some_and(|reason| reason.contains(expected))
        });
        if !found {
            failures.push(format!(
                "{name}: no row at line {line:?} with `{expected}`: {rows:#?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!("bad cases: {}", cases.len());
}

/// Bad catalogs: (what is replaced in the shipped catalog, by what, message).
const BAD_CATALOGS: &[(&str, &str, &str)] = &[
    ("version: 1", "version: 2", "unsupported catalog version 2"),
    (
        "catalog: oncology-v1",
        "catalog: \"\"",
        "the catalog needs a name",
    ),
    (
        "  - id: A1\n",
        "  - id: X1\n",
        "must start with its family letter",
    ),
    ("  - id: A2\n", "  - id: A1\n", "duplicate intervention id `A1`"),
    ("  - id: A1\n", "  - id: baseline\n", "`baseline` is reserved"),
    (
        "title: HER2 status flipped (positive ⇄ negative)",
        "title: \"\"",
        "has an empty title",
    ),
    (
        "remove: [her2_targeted]",
        "remove: [her2_targetted]",
        "unknown treatment class `her2_targetted`",
    ),
    (
        "add: [her2_targeted]",
        "add: [chemo_magic]",
        "unknown treatment class `chemo_magic`",
    ),
    (
        "must_not_repeat: immunotherapy",
        "must_not_repeat: immunotherapie",
        "unknown treatment class `immunotherapie`",
    ),
    (
        "The disease has progressed on {regimen}",
        "The disease has progressed on {regimenn}",
        "unknown placeholder `{regimenn}`",
    ),
    (
        "The disease has progressed on {regimen}",
        "The disease has progressed on {Regimen}",
        "unknown placeholder `{Regimen}`",
    ),
    (
        "        direction: changed\n",
        "        direction: sideways\n",
        "unknown variant `sideways`",
    ),
    (
        "        direction: changed\n",
        "        direction: unchanged\n",
        "must expect `changed`",
    ),
    (
        "    family: A\n",
        "    family: Q\n",
        "unknown family `Q` (the oncology pack's families: A, B, C, D, E, N)",
    ),
    ("interventions:\n", "interventions: 5\n", "invalid type"),
    (
        "    title: HER2 status flipped",
        "    titel: HER2 status flipped",
        "unknown field `titel`",
    ),
    (
        "      - flip_biomarker: {name: HER2}",
        "      - flip_biomarker: {name: HER3}",
        "HER3",
    ),
    (
        "      - flip_biomarker: {name: HER2}",
        "      - teleport: {name: HER2}",
        "unknown variant `teleport`",
    ),
    ("version: 1", "version: one", "invalid type"),
    ("catalog: oncology-v1", "catalog: [oncology]", "invalid type"),
    (
        "description: >",
        "description: [",
        "invalid type: sequence, expected a string",
    ),
    (
        "  - id: A1\n",
        "  - id: A1\n\t",
        "found a tab character that violates indentation",
    ),
    ("  - id: A1\n", "  - id: A1\n    id: A9\n", "duplicate field `id`"),
    (
        "    family: A\n",
        "    family: [A]\n",
        "invalid type: sequence, expected a string",
    ),
];

#[test]
fn bad_catalogs_fail_with_file_line_and_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shipped =
        std::fs::read_to_string(workspace_root().join("data/packs/oncology/catalog.yaml")).expect("catalog");
    let mut failures = Vec::new();
    for (index, (from, to, expected)) in BAD_CATALOGS.iter().enumerate() {
        assert!(shipped.contains(from), "the shipped catalog holds `{from}`");
        let file = dir.path().join(format!("bad-{index}.yaml"));
        std::fs::write(&file, shipped.replacen(from, to, 1)).expect("write");
        let output = cfeval(&["catalog", "check", file.to_str().expect("utf-8")]);
        no_panic(&output, from);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let prefix = format!("{}:", file.display());
        let located = stdout.lines().any(|line| {
            line.contains(expected)
                && line
                    .strip_prefix(&prefix)
                    .and_then(|rest| rest.split(':').next())
                    .is_some_and(|number| number.parse::<u64>().is_ok_and(|number| number > 0))
        });
        if output.status.success() || !located {
            failures.push(format!(
                "`{from}` → `{to}`: want `{expected}` at {prefix}LINE:\n{stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        BAD_CATALOGS.len(),
        failures.join("\n\n")
    );
    println!("bad catalogs: {}", BAD_CATALOGS.len());
}

fn pipeline(catalog: &Path) -> String {
    format!(
        "[run]\nname = \"bad\"\nseed = 1\n\n[cases]\ncohort = {{ cases = 4, seed = 1 }}\n\n[catalog]\npath = \"{}\"\n\n\
         [infer]\nmax-tokens = 256\n\n[[subjects]]\nname = \"control/reference\"\n\n[[judges]]\nname = \"rule\"\n\n\
         [aggregate]\nresamples = 100\n",
        catalog.display()
    )
}

/// Bad pipelines: (what is replaced in a good pipeline, by what, message).
const BAD_PIPELINES: &[(&str, &str, &str)] = &[
    ("seed = 1\n\n[cases]", "seed = -1\n\n[cases]", "invalid value"),
    (
        "name = \"bad\"",
        "name = \"bad name\"",
        "must be non-empty letters",
    ),
    ("name = \"bad\"", "name = \"\"", "must be non-empty letters"),
    ("name = \"bad\"", "nmae = \"bad\"", "unknown field `nmae`"),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 0, seed = 1 }",
        "at least 1 case",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 1000000000000, seed = 1 }",
        "over the limit of 1000000",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 1e12, seed = 1 }",
        "invalid type",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = -4 }",
        "invalid value",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 4 }\ninputs = [\"x\"]",
        "choose one",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "inputs = []",
        "`inputs` is empty",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "inputs = [\"no/such/folder\"]",
        "does not exist",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 4 }\nformat = \"csv\"",
        "applies to `inputs`",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 4 }\nmax-case-bytes = 10",
        "applies to `inputs`",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 4 }\nfollow-symlinks = true",
        "applies to `inputs`",
    ),
    (
        "cohort = { cases = 4, seed = 1 }",
        "cohort = { cases = 4, sede = 1 }",
        "unknown field `sede`",
    ),
    (
        "[cases]\ncohort = { cases = 4, seed = 1 }\n",
        "[cases]\n",
        "needs `cohort",
    ),
    (
        "max-tokens = 256",
        "max-tokens = 0",
        "max-tokens must be at least 1",
    ),
    (
        "max-tokens = 256",
        "max-steps = 0",
        "max-steps must be at least 1",
    ),
    ("max-tokens = 256", "max-tokens = -5", "invalid value"),
    (
        "max-tokens = 256",
        "concurrency = 0",
        "concurrency must be at least 1",
    ),
    (
        "max-tokens = 256",
        "parallel-units = 0",
        "parallel-units must be at least 1",
    ),
    (
        "max-tokens = 256",
        "temperature = 3.5",
        "temperature 3.5 is not in [0, 2]",
    ),
    (
        "max-tokens = 256",
        "commit-secs = -1.0",
        "commit-secs -1 is not in [0, 3600] seconds",
    ),
    ("max-tokens = 256", "max-token = 256", "unknown field `max-token`"),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\nmax-tokens = 0",
        "max-tokens must be at least 1",
    ),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\nprompt-set = \"loud\"",
        "prompt-set `loud` is not one of neutral, cued",
    ),
    (
        "name = \"control/reference\"",
        "name = \"control/nonsense\"",
        "control/nonsense",
    ),
    ("name = \"control/reference\"", "name = \"nowhere\"", "nowhere"),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\nmodes = [\"batch\"]",
        "batch",
    ),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\nfamilies = [\"Z\"]",
        "unknown family `Z`",
    ),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\nbase-url = \"http://x\"",
        "`base-url` does not apply to the control subject",
    ),
    (
        "name = \"control/reference\"",
        "name = \"control/reference\"\n\n[[subjects]]\nname = \"control/reference\"",
        "named twice",
    ),
    (
        "[[subjects]]\nname = \"control/reference\"\n",
        "",
        "no [[subjects]]",
    ),
    ("[[judges]]\nname = \"rule\"\n", "", "no [[judges]]"),
    (
        "name = \"rule\"",
        "name = \"rule\"\nmax-tokens = 4",
        "max-tokens below 16",
    ),
    (
        "name = \"rule\"",
        "name = \"rule\"\n\n[[judges]]\nname = \"rule\"",
        "named twice",
    ),
    (
        "name = \"rule\"",
        "name = \"rule\"\nfamilies = [\"Q\"]",
        "unknown family `Q`",
    ),
    ("resamples = 100", "resamples = 0", "resamples must be at least 1"),
    ("resamples = 100", "level = 1.5", "level 1.5 is not in (0, 1)"),
    (
        "resamples = 100",
        "blind-spot-threshold = \"high\"",
        "invalid type",
    ),
    (
        "resamples = 100",
        "blind-spot-threshold = 2.0",
        "is not in [0, 1]",
    ),
    (
        "resamples = 100",
        "human-labels = \"missing.csv\"",
        "does not exist",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1",
        "needs a pilot run",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0",
        "sd 0 is not a positive number",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\nsd = 0.3",
        "needs `difference` beside `sd`",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0.3\npower = 1.2",
        "power 1.2 is not in (0, 1)",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0.3\nalpha = 0",
        "alpha 0 is not in (0, 1)",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0\nsd = 0.3",
        "nothing to detect",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = -1.5\nsd = 0.3",
        "difference -1.5 is not in [−1, 1]",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0.3\nsimulations = 0",
        "simulations 0 is not in 1",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0.3\nsimulation = 5",
        "unknown field `simulation`",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\ndifference = 0.1\nsd = 0.3\nsubjects = [\"a\"]",
        "subjects read a pilot run",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \"missing-run\"\nsubjects = [\"a\", \"b\"]",
        "pilot run `missing-run` does not exist",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"\nsubjects = [\"a\"]",
        "needs `threshold`",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"\nsubjects = [\"a\", \"a\"]",
        "two different subjects",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"\nsubjects = [\"a\", \"b\"]\nthreshold = 0.5",
        "threshold is for one subject",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"\nsubjects = [\"a\"]\nthreshold = 1.5",
        "threshold 1.5 is not on the CSS scale",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"",
        "a pilot needs `subjects`",
    ),
    (
        "resamples = 100",
        "resamples = 100\n\n[power]\npilot = \".\"\nsubjects = [\"a\", \"b\"]\nsd = 0.3",
        "sd is for a stated effect",
    ),
    ("[aggregate]", "[aggregat]", "unknown field `aggregat`"),
    ("seed = 1\n", "seed = 1\nseed = 2\n", "duplicate key"),
    ("seed = 1\n", "seed = \n", "string values must be quoted"),
    ("[infer]", "[infer", "unclosed table, expected `]`"),
];

#[test]
fn bad_pipelines_fail_with_file_line_and_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = workspace_root().join("data/packs/oncology/catalog.yaml");
    let good = pipeline(&catalog);
    let mut cases: Vec<(String, String, &str)> = BAD_PIPELINES
        .iter()
        .map(|(from, to, expected)| {
            assert!(good.contains(from), "the good pipeline holds `{from}`");
            (
                format!("`{from}` → `{to}`"),
                good.replacen(from, to, 1),
                *expected,
            )
        })
        .collect();
    // Pathological files are refused quickly, with where.
    cases.push((
        "200,000 nested [".into(),
        format!("x = {}", "[".repeat(200_000)),
        "nest deeper than 32 levels",
    ));
    cases.push((
        "200,000 nested {".into(),
        format!("x = {}", "{a = ".repeat(200_000)),
        "nest deeper than 32 levels",
    ));
    cases.push((
        "a bad catalog".into(),
        good.replace(
            catalog.to_str().expect("utf-8"),
            dir.path().join("cat.yaml").to_str().expect("utf-8"),
        ),
        "unknown placeholder `{regimenn}`",
    ));
    std::fs::write(
        dir.path().join("cat.yaml"),
        std::fs::read_to_string(&catalog)
            .expect("catalog")
            .replacen("{regimen}", "{regimenn}", 1),
    )
    .expect("write");
    let mut failures = Vec::new();
    for (index, (what, text, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad-{index}.toml"));
        std::fs::write(&file, text).expect("write");
        let started = std::time::Instant::now();
        let output = cfeval(&["run", file.to_str().expect("utf-8"), "--dry-run"]);
        let took = started.elapsed();
        no_panic(&output, what);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let prefix = format!("{}:", file.display());
        let located = stderr.lines().any(|line| {
            line.contains(expected)
                && line.split_once(&prefix).is_some_and(|(_, rest)| {
                    rest.split(':')
                        .next()
                        .is_some_and(|number| number.parse::<u64>().is_ok_and(|number| number > 0))
                })
        });
        if output.status.success() || !located || took > std::time::Duration::from_secs(20) {
            failures.push(format!(
                "{what}: want `{expected}` at {prefix}LINE (took {took:?}):\n{stderr}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    println!("bad pipelines: {}", cases.len());
}

#[test]
fn the_catalogue_holds_at_least_a_hundred_bad_inputs() {
    // Damaged runs: the kinds of corruption.rs.
    const RUN_DAMAGE: usize = 39;
    let total = bad_cases().len() + BAD_CATALOGS.len() + BAD_PIPELINES.len() + 3 + RUN_DAMAGE;
    println!(
        "bad inputs: {total} ({} cases, {} catalogs, {} pipelines, {RUN_DAMAGE} damaged runs)",
        bad_cases().len(),
        BAD_CATALOGS.len(),
        BAD_PIPELINES.len() + 3
    );
    assert!(total >= 100, "{total}");
    assert!(bad_cases().len() + BAD_CATALOGS.len() + BAD_PIPELINES.len() + 3 >= 100);
}
