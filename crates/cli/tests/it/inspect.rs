//! `cfeval show` and `cfeval status`.

use cfeval_schema::TableName;

use crate::support::*;

#[test]
fn show_prints_every_table_as_json_lines_with_nested_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_sample_run(&run);
    for table in TableName::ALL {
        let output = cfeval(&[
            "show",
            table.dir_name(),
            "--run",
            run.to_str().expect("utf-8"),
            "--limit",
            "7",
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 7, "{table}: --limit 7");
        let first: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON object per line");
        for field in table.schema().fields() {
            assert!(
                first.get(field.name()).is_some(),
                "{table}: column {} missing",
                field.name()
            );
        }
    }
    let output = cfeval(&[
        "show",
        "responses",
        "--run",
        run.to_str().expect("utf-8"),
        "--limit",
        "1",
    ]);
    let row: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(
        row["trace"][0]["tool"], "read_chart_section",
        "nested trace as nested JSON: {row}"
    );
    assert_eq!(row["sections_read"][0], "biomarkers");
}

#[test]
fn show_all_rows_projection_and_table_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_sample_run(&run);
    let run = run.to_str().expect("utf-8");
    let output = cfeval(&["show", "judgments", "--run", run, "--columns", "subject,score"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert_eq!(
        stdout.lines().count() as u64,
        SAMPLE_ROWS,
        "every row across every shard"
    );
    let row: serde_json::Value = serde_json::from_str(stdout.lines().next().expect("a row")).expect("json");
    assert_eq!(row.as_object().expect("object").len(), 2);
    let output = cfeval(&[
        "show", "scores", "--run", run, "--format", "table", "--limit", "3",
    ]);
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(stdout.contains("| run"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|line| line.starts_with("| sample")).count(),
        3,
        "{stdout}"
    );
}

#[test]
fn status_counts_shards_and_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_sample_run(&run);
    let output = cfeval(&["status", run.to_str().expect("utf-8")]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(stdout.contains(&format!("{SAMPLE_ROWS} rows")), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|line| line.trim_start().starts_with("judgments")),
        "{stdout}"
    );
}

#[test]
fn errors_are_one_line_on_stderr_with_nonzero_exit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope");
    let output = cfeval(&["show", "judgments", "--run", missing.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no table `judgments`"), "{stderr}");
    assert!(output.stdout.is_empty(), "stdout carries data only");

    let output = cfeval(&["show", "judgements", "--run", "x"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown table `judgements`"));

    // A corrupt shard: the error names the file.
    let run = dir.path().join("run");
    write_sample_run(&run);
    let shard = run.join("scores/part-00000.parquet");
    std::fs::remove_file(&shard).expect("remove");
    let output = cfeval(&["show", "scores", "--run", run.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains(&shard.display().to_string()));
}
