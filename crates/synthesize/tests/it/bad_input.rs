//! Bad inputs become clear errors or quarantine rows; the rest converts.

use cfeval_synthesize::{Config, Error, InputFormat, run};

const GOOD_TEXT: &str = "Pathology: gastric adenocarcinoma.\nMolecular: HER2 3+, PD-L1 CPS 8.\nStaging: stage IV, peritoneal metastases.\n";

#[test]
fn bad_inputs_are_quarantined_and_the_rest_converts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("inputs");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("a_empty.txt"), "").unwrap();
    std::fs::write(
        input.join("b_latin1.txt"),
        b"Pathology: breast cancer, ER positive \xE9t\xE9\n",
    )
    .unwrap();
    std::fs::write(input.join("c_good.txt"), GOOD_TEXT).unwrap();
    let mut jsonl = format!(
        "{}\n{{\"id\": \"broken\", \"text\": \"HER2\n{}\n",
        serde_json::json!({"id": "j1", "text": GOOD_TEXT}),
        serde_json::json!({"id": "j2", "text": "NSCLC stage IIIA, EGFR wild-type"})
    )
    .into_bytes();
    jsonl.extend_from_slice(b"\xFF\xFE\n");
    std::fs::write(input.join("d_cases.jsonl"), jsonl).unwrap();
    std::fs::write(input.join("e_missing.csv"), "id,notes\n1,HER2 positive\n").unwrap();
    std::fs::write(
        input.join("f_rows.csv"),
        "id,text\nr1,\"melanoma, BRAF V600E\"\nr2,too,many,fields\n",
    )
    .unwrap();
    let huge = format!(
        "Pathology: melanoma.\n{}",
        "BRAF wild-type. ".repeat(5 * 1024 * 1024 / 16)
    );
    std::fs::write(input.join("g_huge.txt"), &huge).unwrap();

    let run_dir = dir.path().join("run");
    let report = run(&Config::default(), &[input], &run_dir).unwrap();
    // c_good, j1, j2, r1.
    assert_eq!(report.cases, 4, "{report:?}");
    assert_eq!(report.quarantined, 7, "{:#?}", report.quarantine_reasons);
    let rows = crate::quarantine_rows(&run_dir);
    let reason = |file: &str| -> Vec<(Option<u64>, String)> {
        rows.iter()
            .filter(|row| row.source_path.ends_with(file))
            .map(|row| (row.source_line, row.reason.clone()))
            .collect()
    };
    assert!(reason("a_empty.txt")[0].1.contains("empty file"));
    assert!(reason("b_latin1.txt")[0].1.contains("not valid UTF-8"));
    let jsonl_reasons = reason("d_cases.jsonl");
    assert_eq!(jsonl_reasons.len(), 2, "{jsonl_reasons:?}");
    assert_eq!(jsonl_reasons[0].0, Some(2));
    assert!(
        jsonl_reasons[0].1.starts_with("line 2: malformed JSON"),
        "{jsonl_reasons:?}"
    );
    assert_eq!(jsonl_reasons[1].0, Some(4));
    assert!(jsonl_reasons[1].1.contains("line 4: not valid UTF-8"));
    let missing = reason("e_missing.csv");
    assert!(
        missing[0].1.contains("missing a `text` column") && missing[0].1.contains("notes"),
        "{missing:?}"
    );
    let rows_csv = reason("f_rows.csv");
    assert_eq!(rows_csv[0].0, Some(3));
    assert!(rows_csv[0].1.contains("4 fields where the header has 2"));
    let huge_reason = reason("g_huge.txt");
    assert!(huge_reason[0].1.contains("over the limit"), "{huge_reason:?}");
    assert!(rows.iter().all(|row| {
        row.excerpt
            .as_ref()
            .is_none_or(|excerpt| excerpt.len() <= 2048 * 3)
    }));

    // The converted cases are all there.
    let cases = crate::case_rows(&run_dir);
    let ids: Vec<&str> = cases.iter().map(|case| case.source_id.as_str()).collect();
    assert_eq!(ids, vec!["c_good", "j1", "j2", "r1"]);
}

#[test]
fn a_large_case_converts_when_the_limit_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let huge = format!(
        "Pathology: melanoma.\nMolecular: BRAF V600E.\n{}",
        "Unremarkable follow-up. ".repeat(5 * 1024 * 1024 / 24)
    );
    let path = dir.path().join("huge.txt");
    std::fs::write(&path, &huge).unwrap();
    let config = Config {
        max_case_bytes: 8 * 1024 * 1024,
        ..Config::default()
    };
    let report = run(&config, &[path], &dir.path().join("run")).unwrap();
    assert_eq!(
        (report.cases, report.quarantined, report.span_failures),
        (1, 0, 0)
    );
}

#[test]
fn an_unknown_format_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cases.dat");
    std::fs::write(&path, "some clinical text\n").unwrap();
    let error = run(
        &Config::default(),
        std::slice::from_ref(&path),
        &dir.path().join("run"),
    )
    .unwrap_err();
    assert!(matches!(error, Error::UnknownFormat { .. }));
    let message = error.to_string();
    assert!(
        message.contains("cases.dat") && message.contains("--format"),
        "{message}"
    );
    // Told the format, it reads.
    let config = Config {
        format: InputFormat::Text,
        ..Config::default()
    };
    assert_eq!(run(&config, &[path], &dir.path().join("run2")).unwrap().cases, 1);
}
