//! Intake (issue #14): duplicates, broken CSV quotes, folders read
//! recursively, wrong JSON types and links. Nothing is lost, doubled or
//! dropped without a row that says why.

use std::path::Path;

use cfeval_synthesize::{Config, run};

/// `(file name, line, reason)` of every quarantine row.
fn quarantined(run_dir: &Path) -> Vec<(String, Option<u64>, String)> {
    crate::quarantine_rows(run_dir)
        .into_iter()
        .map(|row| {
            let name = Path::new(&row.source_path)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, row.source_line, row.reason)
        })
        .collect()
}

fn ids(run_dir: &Path) -> Vec<String> {
    crate::case_rows(run_dir)
        .into_iter()
        .map(|case| case.source_id)
        .collect()
}

const TEXT: &str = "Pathology: invasive ductal carcinoma. Biomarkers: ER positive, HER2 negative.";

#[test]
fn duplicate_ids_quarantine_every_copy_each_naming_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("a.jsonl");
    let line = |id: &str| serde_json::json!({"id": id, "text": TEXT}).to_string();
    std::fs::write(
        &jsonl,
        format!("{}\n{}\n{}\n", line("p1"), line("p2"), line("p1")),
    )
    .unwrap();
    let csv = dir.path().join("b.csv");
    std::fs::write(
        &csv,
        format!("id,text\np3,\"{TEXT}\"\np2,other text about HER2\n"),
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let report = run(&Config::default(), &[jsonl, csv], &run_dir).unwrap();
    assert_eq!((report.cases, report.quarantined), (1, 4), "{report:?}");
    assert_eq!(ids(&run_dir), vec!["p3"]);
    let rows = quarantined(&run_dir);
    let find = |file: &str, line: u64| {
        rows.iter()
            .find(|(name, at, _)| name == file && *at == Some(line))
            .map(|(_, _, reason)| reason.clone())
            .unwrap_or_else(|| panic!("no row for {file}:{line}: {rows:#?}"))
    };
    assert!(
        find("a.jsonl", 1).contains("duplicate case `p1`: also at")
            && find("a.jsonl", 1).contains("a.jsonl:3")
    );
    assert!(find("a.jsonl", 3).contains("a.jsonl:1"));
    assert!(find("a.jsonl", 2).contains("b.csv:3"), "{}", find("a.jsonl", 2));
    assert!(find("b.csv", 3).contains("a.jsonl:2"));
}

#[test]
fn an_unclosed_csv_quote_is_reported_where_it_starts_and_swallows_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("cases.csv");
    std::fs::write(
        &csv,
        "id,text\n\
         a,\"HPI: 60F, breast cancer.\n\
         b,HPI: 50M with colon cancer.\n\
         c,\"HPI: 70F, \"\"NSCLC\"\".\"\n\
         d,\"HPI: 40F.\nPathology: melanoma.\"\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    run(&Config::default(), &[csv], &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["b", "c", "d"], "{:#?}", quarantined(&run_dir));
    let rows = quarantined(&run_dir);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0].1, Some(2));
    assert!(
        rows[0]
            .2
            .starts_with("line 2: the quoted field opened on line 2 is not closed properly"),
        "{rows:#?}"
    );

    // Never closed at all: the rest of the file is still read.
    std::fs::write(
        dir.path().join("cases.csv"),
        "id,text\nx,\"open\ny,HPI: 50M.\nz,HPI: 40F.\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run2");
    run(&Config::default(), &[dir.path().join("cases.csv")], &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["y", "z"]);
    let rows = quarantined(&run_dir);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(
        rows[0]
            .2
            .starts_with("line 2: the quoted field opened on line 2 is never closed")
    );
}

#[test]
fn folders_are_read_recursively_and_unknown_files_are_skipped_with_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("sub/deeper")).unwrap();
    std::fs::write(input.join("top.txt"), TEXT).unwrap();
    std::fs::write(input.join("sub/middle.md"), TEXT.replace("ductal", "lobular")).unwrap();
    std::fs::write(
        input.join("sub/deeper/rows.jsonl"),
        format!("{}\n", serde_json::json!({"id": "deep", "text": TEXT})),
    )
    .unwrap();
    std::fs::write(input.join("sub/notes.dat"), "not a case\n").unwrap();
    std::fs::write(input.join(".DS_Store"), [0u8, 1, 2]).unwrap();
    let run_dir = dir.path().join("run");
    let report = run(&Config::default(), &[input], &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["deep", "middle", "top"]);
    assert_eq!(report.quarantined, 2, "{report:?}");
    let rows = quarantined(&run_dir);
    assert!(rows.iter().any(|(name, _, reason)| name == "notes.dat"
        && reason.starts_with("skipped: cannot tell the format")
        && reason.contains("--format")));
    assert!(
        rows.iter()
            .any(|(name, _, reason)| name == ".DS_Store" && reason.contains("hidden"))
    );
}

#[cfg(unix)]
#[test]
fn links_in_folders_are_not_followed_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, TEXT).unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("own.txt"), TEXT.replace("ER", "PR")).unwrap();
    std::os::unix::fs::symlink(&outside, input.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&input, input.join("loop")).unwrap();
    let run_dir = dir.path().join("run");
    run(&Config::default(), std::slice::from_ref(&input), &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["own"]);
    let rows = quarantined(&run_dir);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(
        rows.iter()
            .all(|(_, _, reason)| reason.contains("symbolic link") && reason.contains("--follow-symlinks"))
    );

    let config = Config {
        follow_symlinks: true,
        ..Config::default()
    };
    let run_dir = dir.path().join("run2");
    run(&config, &[input], &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["link", "own"]);
    let rows = quarantined(&run_dir);
    assert!(
        rows.iter()
            .any(|(name, _, reason)| name == "loop" && reason.contains("already read")),
        "{rows:#?}"
    );
}

#[test]
fn wrong_json_types_are_refused_per_case_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("cases.jsonl");
    let lines = [
        r#"{"id":"n","text":null}"#,
        r#"{"id":"num","text":12345}"#,
        r#"{"id":"arr","text":["a","b"]}"#,
        r#"{"id":"ok","text":"HPI: 60F with HER2+ breast cancer."}"#,
        r#"{"id":["x"],"text":"HPI"}"#,
        r#"{"id":"blank","text":"   "}"#,
        r#"{"id":"sec","staging":5}"#,
        r#"{"id":"dx","text":"HPI","diagnosis":{"a":1}}"#,
        r#"12345"#,
        r#"["a","b"]"#,
    ];
    std::fs::write(&jsonl, lines.join("\n")).unwrap();
    let run_dir = dir.path().join("run");
    run(&Config::default(), &[jsonl], &run_dir).unwrap();
    assert_eq!(ids(&run_dir), vec!["ok"]);
    let rows = quarantined(&run_dir);
    let expected = [
        (1, "field `text` is null; the case text must be a string"),
        (2, "field `text` is a number (12345)"),
        (3, "field `text` is an array ([\"a\",\"b\"])"),
        (5, "field `id` is an array"),
        (6, "the case text is empty"),
        (7, "field `staging` is a number (5)"),
        (8, "field `diagnosis` is an object"),
        (9, "expected a JSON object, found a number"),
        (10, "expected a JSON object, found an array"),
    ];
    assert_eq!(rows.len(), expected.len(), "{rows:#?}");
    for ((_, line, reason), (want_line, want)) in rows.iter().zip(expected) {
        assert_eq!(*line, Some(want_line), "{reason}");
        assert!(
            reason.starts_with(&format!("line {want_line}: ")) && reason.contains(want),
            "{reason} / {want}"
        );
    }

    let osce = dir.path().join("osce.jsonl");
    std::fs::write(
        &osce,
        "{\"OSCE_Examination\":{\"Objective_for_Doctor\":\"Diagnose.\",\"Patient_Actor\":5}}\n\
         {\"OSCE_Examination\":{\"Objective_for_Doctor\":\"Diagnose.\",\"Patient_Actor\":{\"History\":\"cough\"}}}\n\
         {\"OSCE_Examination\":{\"Correct_Diagnosis\":\"TB\"}}\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run2");
    run(&Config::default(), &[osce], &run_dir).unwrap();
    assert_eq!(crate::case_rows(&run_dir).len(), 1);
    let rows = quarantined(&run_dir);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(
        rows[0]
            .2
            .contains("line 1: field `OSCE_Examination.Patient_Actor` is a number (5), not an object"),
        "{rows:#?}"
    );
    assert!(
        rows[1]
            .2
            .contains("line 3: `OSCE_Examination` holds no case text"),
        "{rows:#?}"
    );
}

#[test]
fn a_limit_converts_the_first_cases_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("a.jsonl");
    let line = |id: &str| serde_json::json!({"id": id, "text": TEXT}).to_string();
    std::fs::write(
        &jsonl,
        format!("{}\n{}\n{}\n", line("p1"), line("p2"), line("p3")),
    )
    .unwrap();
    let config = Config {
        limit: Some(2),
        ..Config::default()
    };
    let run_dir = dir.path().join("run");
    let report = run(&config, std::slice::from_ref(&jsonl), &run_dir).unwrap();
    assert_eq!((report.cases, report.beyond_limit), (2, 1));
    assert_eq!(ids(&run_dir), vec!["p1", "p2"]);
    assert!(
        quarantined(&run_dir).is_empty(),
        "a case beyond the limit is not quarantined"
    );
    // Another limit is another conversion.
    let all = run(&Config::default(), &[jsonl], &run_dir).unwrap();
    assert_eq!((all.cases, all.beyond_limit), (3, 0));
}
