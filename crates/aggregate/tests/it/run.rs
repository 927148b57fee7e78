//! `run` end to end on a synthetic run: estimates equal direct computations,
//! CSS excludes family N, comparisons and agreement rows are there, human
//! labels are compared, reruns replace and are reproducible.

use std::collections::BTreeMap;
use std::path::Path;

use cfeval_aggregate::synthetic::{Shape, write_judgments};
use cfeval_aggregate::{Config, run};
use cfeval_schema::{ScoreRow, ShardStore};

fn small_shape() -> Shape {
    Shape::standard(40, 1, 2)
}

fn config() -> Config {
    Config {
        resamples: 400,
        seed: 3,
        ..Config::default()
    }
}

fn read_scores(run_dir: &Path) -> Vec<ScoreRow> {
    let store = ShardStore::open_table::<ScoreRow>(run_dir).expect("open scores");
    store
        .read_rows::<ScoreRow>()
        .expect("scan")
        .flat_map(|batch| batch.expect("batch"))
        .collect()
}

fn find<'a>(
    rows: &'a [ScoreRow],
    subject: &str,
    mode: &str,
    judge: &str,
    metric: &str,
    group: &str,
) -> Vec<&'a ScoreRow> {
    rows.iter()
        .filter(|row| {
            row.subject == subject
                && row.mode == mode
                && row.judge == judge
                && row.metric == metric
                && row.group == group
        })
        .collect()
}

#[test]
fn estimates_equal_direct_means_and_css_excludes_family_n() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = small_shape();
    write_judgments(&shape, dir.path()).expect("write");
    let report = run(&config(), dir.path()).expect("aggregate");
    assert_eq!(report.judgments as usize, shape.len());
    assert_eq!(
        report.controls,
        vec!["control/constant".to_string(), "control/reference".to_string()]
    );
    let rows = read_scores(dir.path());
    assert_eq!(rows.len(), report.score_rows);

    // Direct means from the generated rows.
    let mut sums: BTreeMap<(String, String, String, String), (f64, f64)> = BTreeMap::new();
    for row in shape.rows().filter(|row| row.metric == "css") {
        let group = if row.family == "N" {
            "N".to_string()
        } else {
            "AE".to_string()
        };
        let spurious = f64::from(u8::from(row.label.as_deref() == Some("shifted_spuriously")));
        let value = if row.family == "N" {
            spurious
        } else {
            row.score.expect("score")
        };
        let cell = sums.entry((row.subject, row.mode, row.judge, group)).or_default();
        cell.0 += value;
        cell.1 += 1.0;
    }
    for ((subject, mode, judge, group), (sum, count)) in sums {
        let (metric, group_name) = if group == "N" {
            ("spurious_shift", "N")
        } else {
            ("css", "all")
        };
        let found = find(&rows, &subject, &mode, &judge, metric, group_name);
        assert_eq!(
            found.len(),
            2,
            "{subject} {mode} {judge} {metric}: one percentile and one bca row"
        );
        for row in found {
            assert!(
                (row.value - sum / count).abs() < 1e-12,
                "{subject} {metric}: {} vs {}",
                row.value,
                sum / count
            );
            assert_eq!(row.n_tuples, count as u64);
            let (low, high) = (row.ci_low.expect("low"), row.ci_high.expect("high"));
            assert!(low <= row.value + 1e-12 && row.value <= high + 1e-12, "{row:?}");
        }
    }
    // The reference control responds, the constant control never does.
    let reference = find(&rows, "control/reference", "single_shot", "rule", "css", "all");
    assert!(reference[0].value > 0.9 && reference[0].is_control);
    let constant = find(&rows, "control/constant", "single_shot", "rule", "css", "all");
    assert!(constant[0].value < 0.4);
    // Per family and per intervention, and CMS.
    for family in ["A", "B", "C", "D", "E"] {
        assert_eq!(find(&rows, "xai/grok-4", "agent", "rule", "css", family).len(), 2);
    }
    assert_eq!(find(&rows, "xai/grok-4", "agent", "rule", "css", "D1").len(), 2);
    assert!(
        find(&rows, "xai/grok-4", "agent", "rule", "css", "N").is_empty(),
        "no CSS on family N"
    );
    assert_eq!(
        find(&rows, "xai/grok-4", "single_shot", "rule", "cms", "all").len(),
        2
    );
    // Agent-only failure shares; deltas are paired agent − single_shot.
    assert_eq!(
        find(&rows, "xai/grok-4", "agent", "rule", "integration_failure", "all").len(),
        2
    );
    assert!(
        find(
            &rows,
            "xai/grok-4",
            "single_shot",
            "rule",
            "integration_failure",
            "all"
        )
        .is_empty()
    );
    let delta = find(
        &rows,
        "xai/grok-4",
        "agent-single_shot",
        "rule",
        "delta_agent_minus_single_shot",
        "all",
    );
    let agent = find(&rows, "xai/grok-4", "agent", "rule", "css", "all")[0].value;
    let single = find(&rows, "xai/grok-4", "single_shot", "rule", "css", "all")[0].value;
    assert!((delta[0].value - (agent - single)).abs() < 1e-12);
}

#[test]
fn comparisons_and_agreement_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&small_shape(), dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    // Ranks over the four subjects under test (controls excluded).
    let ranks: Vec<&ScoreRow> = rows
        .iter()
        .filter(|row| row.metric == "rank_css" && row.mode == "single_shot" && row.judge == "rule")
        .collect();
    assert_eq!(ranks.len(), 4);
    assert!(ranks.iter().all(|row| !row.is_control));
    let mut values: Vec<f64> = ranks.iter().map(|row| row.value).collect();
    values.sort_by(f64::total_cmp);
    assert_eq!(values, vec![1.0, 2.0, 3.0, 4.0]);
    let grok = ranks
        .iter()
        .find(|row| row.subject == "xai/grok-4")
        .expect("grok");
    assert_eq!(
        grok.value, 1.0,
        "the most responsive synthetic subject ranks first"
    );
    let rho = find(&rows, "all", "single_shot", "rule", "spearman_cms_css", "all");
    assert_eq!(rho.len(), 1);
    assert!((-1.0..=1.0).contains(&rho[0].value) && rho[0].ci_low.is_some());
    let p = find(&rows, "all", "single_shot", "rule", "spearman_cms_css_p", "all");
    assert!(p[0].value > 0.0 && p[0].value <= 1.0);
    // Family D is the synthetic blind spot (every subject ≤ 0.2 updates).
    let blind = |family: &str| find(&rows, "all", "single_shot", "rule", "blind_spot", family)[0].value;
    assert_eq!(blind("D"), 1.0);
    assert_eq!(blind("A"), 0.0);
    // Two judges (named in sorted order): κ over tuples, ρ over subjects.
    let kappa = find(&rows, "all", "all", "openai/gpt-5.4 vs rule", "kappa", "all");
    assert_eq!(kappa.len(), 1);
    assert!(kappa[0].value > 0.5 && kappa[0].value < 1.0, "{}", kappa[0].value);
    assert!(
        !find(
            &rows,
            "all",
            "all",
            "openai/gpt-5.4 vs rule",
            "kappa_quadratic",
            "all"
        )
        .is_empty()
    );
    assert_eq!(
        find(
            &rows,
            "all",
            "agent",
            "openai/gpt-5.4 vs rule",
            "spearman_judges",
            "all"
        )
        .len(),
        1
    );
}

#[test]
fn human_labels_are_compared_with_the_judges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = small_shape();
    write_judgments(&shape, dir.path()).expect("write");
    // Humans agree with the rule judge on 60 tuples.
    let mut csv = String::from("subject,mode,case_id,intervention,score,note\n");
    for row in shape
        .rows()
        .filter(|row| row.metric == "css" && row.judge == "rule" && row.family != "N")
        .take(60)
    {
        csv.push_str(&format!(
            "{},{},{},{},{},x\n",
            row.subject,
            row.mode,
            row.case_id,
            row.intervention,
            row.score.expect("score")
        ));
    }
    let labels = dir.path().join("human.csv");
    std::fs::write(&labels, csv).expect("write csv");
    let config = Config {
        human_labels: Some(labels.clone()),
        ..config()
    };
    run(&config, dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    let kappa = find(&rows, "all", "all", "human vs rule", "kappa", "all");
    assert_eq!(kappa[0].value, 1.0);
    assert_eq!(kappa[0].n_tuples, 60);
    let human: Vec<&ScoreRow> = rows
        .iter()
        .filter(|row| row.metric == "human_failure_rate")
        .collect();
    let judge: Vec<&ScoreRow> = rows
        .iter()
        .filter(|row| row.metric == "judge_failure_rate" && row.judge == "rule")
        .collect();
    assert!(!human.is_empty());
    for row in &human {
        let same = judge
            .iter()
            .find(|other| other.group == row.group)
            .expect("judge rate");
        assert_eq!(same.value, row.value);
    }
    // A bad score names the file and row.
    std::fs::write(&labels, "subject,mode,case_id,intervention,score\na,b,c,d,0.7\n").expect("write");
    let error = run(&config, dir.path()).expect_err("bad score").to_string();
    assert!(error.contains("human.csv") && error.contains("row 2"), "{error}");
}

#[test]
fn reruns_replace_and_reproduce() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&small_shape(), dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let first = read_scores(dir.path());
    run(&config(), dir.path()).expect("aggregate again");
    let second = read_scores(dir.path());
    assert_eq!(first, second);
    run(&Config { seed: 4, ..config() }, dir.path()).expect("other seed");
    let third = read_scores(dir.path());
    assert_eq!(first.len(), third.len());
    assert_ne!(first, third);
}

#[test]
fn missing_judgments_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let error = run(&config(), dir.path()).expect_err("no judgments");
    assert!(error.to_string().contains("no judgments"), "{error}");
}
