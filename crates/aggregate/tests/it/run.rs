//! `run` end to end on a synthetic run: estimates equal direct computations,
//! CSS excludes family N and undecided or incomplete judgments (counted),
//! the family-balanced CSS is the mean of the family means, comparisons
//! (ranks, rank probabilities, blind spots agreed across judges) leave the
//! controls out, agreement rows are there, human labels are compared, reruns
//! replace and are reproducible.

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
fn family_balanced_css_is_the_mean_of_the_family_means() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&small_shape(), dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    for subject in ["xai/grok-4", "control/reference"] {
        let families: Vec<f64> = ["A", "B", "C", "D", "E"]
            .iter()
            .map(|family| find(&rows, subject, "agent", "rule", "css", family)[0].value)
            .collect();
        let balanced = find(&rows, subject, "agent", "rule", "css_balanced", "all");
        assert_eq!(balanced.len(), 2, "percentile and bca");
        let mean = families.iter().sum::<f64>() / 5.0;
        assert!((balanced[0].value - mean).abs() < 1e-12, "{subject}");
        let (low, high) = (
            balanced[0].ci_low.expect("low"),
            balanced[0].ci_high.expect("high"),
        );
        assert!(
            low <= mean && mean <= high,
            "{subject}: {mean} not in [{low}, {high}]"
        );
        assert_eq!(
            balanced[0].n_tuples,
            find(&rows, subject, "agent", "rule", "css", "all")[0].n_tuples
        );
    }
    // Family A has three interventions, B one: the tuple-weighted CSS leans
    // to A, the balanced one does not.
    let css = find(&rows, "xai/grok-4", "agent", "rule", "css", "all")[0].value;
    let balanced = find(&rows, "xai/grok-4", "agent", "rule", "css_balanced", "all")[0].value;
    assert!((css - balanced).abs() > 1e-6);
    let delta = find(
        &rows,
        "xai/grok-4",
        "agent-single_shot",
        "rule",
        "delta_agent_minus_single_shot_css_balanced",
        "all",
    );
    let single = find(&rows, "xai/grok-4", "single_shot", "rule", "css_balanced", "all")[0].value;
    assert!((delta[0].value - (balanced - single)).abs() < 1e-12);
}

#[test]
fn uncertain_and_truncated_judgments_are_left_out_and_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut shape = small_shape();
    shape.abstain = 0.1;
    shape.truncated = 0.05;
    write_judgments(&shape, dir.path()).expect("write");
    let report = run(&config(), dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    // Direct counts and CSS over the decided judgments of one cell.
    let cell = |row: &cfeval_schema::JudgmentRow| {
        row.subject == "xai/grok-4" && row.mode == "agent" && row.judge == "rule" && row.metric == "css"
    };
    let judged: Vec<cfeval_schema::JudgmentRow> = shape.rows().filter(cell).collect();
    let in_css = |row: &&cfeval_schema::JudgmentRow| row.family != "N";
    let uncertain = judged
        .iter()
        .filter(in_css)
        .filter(|row| row.label.as_deref() == Some("uncertain"))
        .count();
    let truncated = judged
        .iter()
        .filter(in_css)
        .filter(|row| row.status == "truncated")
        .count();
    assert!(uncertain > 0 && truncated > 0);
    let decided: Vec<f64> = judged.iter().filter(in_css).filter_map(|row| row.score).collect();
    let count = |metric: &str| find(&rows, "xai/grok-4", "agent", "rule", metric, "all");
    assert_eq!(count("uncertain")[0].value, uncertain as f64);
    assert_eq!(count("truncated")[0].value, truncated as f64);
    assert_eq!(count("refused")[0].value, 0.0);
    assert_eq!(
        count("uncertain")[0].n_tuples,
        judged.iter().filter(in_css).count() as u64
    );
    let css = &count("css")[0];
    assert_eq!(css.n_tuples, decided.len() as u64);
    assert!((css.value - decided.iter().sum::<f64>() / decided.len() as f64).abs() < 1e-12);
    // Per family, the control family included.
    let family_d: usize = judged
        .iter()
        .filter(|row| row.family == "D" && row.label.as_deref() == Some("uncertain"))
        .count();
    assert_eq!(
        find(&rows, "xai/grok-4", "agent", "rule", "uncertain", "D")[0].value,
        family_d as f64
    );
    assert_eq!(
        find(&rows, "xai/grok-4", "agent", "rule", "truncated", "N").len(),
        1
    );
    assert!(report.uncertain > 0 && report.truncated > 0 && report.refused == 0);
    assert_eq!(report.judge_errors, 0);
}

#[test]
fn comparisons_and_agreement_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Judges that agree closely, and a threshold that 40 cases can show the
    // best subject's family-D CSS (about 0.1 to 0.15) to be below.
    let mut shape = small_shape();
    shape.judge_agreement = 0.97;
    write_judgments(&shape, dir.path()).expect("write");
    let config = Config {
        blind_spot_threshold: 0.25,
        ..config()
    };
    run(&config, dir.path()).expect("aggregate");
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
    assert_eq!(rho[0].n_tuples, 4, "controls take no part in ρ");
    // Rank probabilities from the same resamples, over the subjects under test.
    let first: Vec<&ScoreRow> = rows
        .iter()
        .filter(|row| row.metric == "rank_first_css" && row.mode == "single_shot" && row.judge == "rule")
        .collect();
    assert_eq!(first.len(), 4);
    assert!(first.iter().all(|row| !row.subject.starts_with("control/")));
    assert!((first.iter().map(|row| row.value).sum::<f64>() - 1.0).abs() < 1e-9);
    assert_eq!(first[0].n_tuples, 400, "every resample usable");
    let grok_first = first
        .iter()
        .find(|row| row.subject == "xai/grok-4")
        .expect("grok");
    assert!(grok_first.value > 0.5, "{}", grok_first.value);
    let swap = |subject: &str, group: &str| {
        find(
            &rows,
            subject,
            "single_shot",
            "rule",
            "rank_swap_probability",
            group,
        )
    };
    assert_eq!(swap("all", "all").len(), 1);
    // Pairs once each (6 of 4 subjects), per subject, and overall.
    let pairs = rows
        .iter()
        .filter(|row| {
            row.metric == "rank_swap_probability"
                && row.mode == "single_shot"
                && row.judge == "rule"
                && row.subject != "all"
                && row.group != "all"
        })
        .count();
    assert_eq!(pairs, 6);
    let any = swap("all", "all")[0].value;
    let pair = swap("embedded/smollm2-135m", "xai/grok-4");
    assert_eq!(pair.len(), 1);
    assert!((0.0..=any).contains(&pair[0].value));
    // Family D is the synthetic blind spot: every subject's upper bound is
    // below the threshold; both judges say so, so it is agreed.
    let blind = |family: &str| find(&rows, "all", "single_shot", "rule", "blind_spot", family)[0].value;
    assert_eq!(blind("D"), 1.0);
    assert_eq!(blind("A"), 0.0);
    let upper = find(&rows, "all", "single_shot", "rule", "css_upper_max", "D")[0].value;
    assert!(upper < 0.25, "{upper}");
    let best = find(&rows, "all", "single_shot", "rule", "best_css", "D")[0];
    assert!(best.ci_high.expect("interval") <= upper);
    let agreed =
        |family: &str| find(&rows, "all", "single_shot", "all", "blind_spot_agreed", family)[0].value;
    assert_eq!(agreed("D"), 1.0);
    assert_eq!(agreed("A"), 0.0);
    assert_eq!(
        find(&rows, "all", "single_shot", "all", "blind_spot_judges", "D")[0].value,
        2.0
    );
    // Two judges (named in sorted order): κ over tuples, ρ over subjects.
    let kappa = find(&rows, "all", "all", "openai/gpt-5.4 vs rule", "kappa", "all");
    assert_eq!(kappa.len(), 1);
    // Over the tuples of the four subjects under test only.
    assert_eq!(kappa[0].n_tuples, 4 * 2 * 40 * 10);
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

#[test]
fn one_judge_never_agrees_on_a_blind_spot() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&Shape::standard(40, 1, 1), dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    assert_eq!(
        find(&rows, "all", "single_shot", "rule", "blind_spot", "D")[0].value,
        1.0
    );
    let agreed = find(&rows, "all", "single_shot", "all", "blind_spot_agreed", "D");
    assert_eq!((agreed[0].value, agreed[0].n_tuples), (0.0, 1));
}

#[test]
fn the_earlier_family_strata_design_is_still_available() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&small_shape(), dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let joint = read_scores(dir.path());
    let stratified = Config {
        resampling: cfeval_aggregate::stats::Resampling::FamilyStrata,
        ..config()
    };
    run(&stratified, dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    let css = |rows: &[ScoreRow]| find(rows, "xai/grok-4", "agent", "rule", "css", "all")[0].clone();
    // Same estimate, other intervals.
    assert_eq!(css(&joint).value, css(&rows).value);
    assert_ne!(css(&joint).ci_low, css(&rows).ci_low);
}

#[test]
fn a_biased_subject_is_compared_with_the_same_subject_without_the_bias() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut shape = small_shape();
    let subject = |name: &str, p: [f64; 5]| (name.to_string(), false, p);
    shape.subjects = vec![
        subject("vllm/doctor", [0.7, 0.6, 0.5, 0.4, 0.6]),
        subject("vllm/doctor+bias=doctor_recency", [0.4, 0.3, 0.3, 0.2, 0.3]),
        subject(
            "vllm/doctor+bias=patient_distrust+turns=10",
            [0.6, 0.6, 0.6, 0.6, 0.6],
        ),
        subject("vllm/doctor+reflect+turns=20", [0.6, 0.6, 0.6, 0.6, 0.6]),
        subject(
            "vllm/doctor+turns=20+bias=doctor_race+reflect",
            [0.6, 0.6, 0.6, 0.6, 0.6],
        ),
    ];
    shape.modes = vec!["dialogue".into()];
    write_judgments(&shape, dir.path()).expect("write");
    run(&config(), dir.path()).expect("aggregate");
    let rows = read_scores(dir.path());
    let value = |subject: &str, metric: &str| {
        let found = find(&rows, subject, "dialogue", "rule", metric, "all");
        assert_eq!(found.len(), 2, "{subject} {metric}: percentile and bca");
        found[0]
    };
    for metric in ["css", "css_balanced", "cms"] {
        let delta_metric = if metric == "css" {
            "delta_bias".to_string()
        } else {
            format!("delta_bias_{metric}")
        };
        let biased = "vllm/doctor+bias=doctor_recency";
        let delta = value(biased, &delta_metric);
        let expected = value(biased, metric).value - value("vllm/doctor", metric).value;
        assert!(
            (delta.value - expected).abs() < 1e-12,
            "{metric}: {} vs {expected}",
            delta.value
        );
        let (low, high) = (delta.ci_low.expect("low"), delta.ci_high.expect("high"));
        assert!(low <= delta.value && delta.value <= high, "{metric}");
        if metric == "css" {
            assert!(
                high < 0.0,
                "a bias that halves the updates shows: [{low}, {high}]"
            );
        }
    }
    // Its unbiased peer keeps its other options (`+turns=10`): no such
    // subject ran, so no delta; the unbiased subject has none of its own.
    assert!(
        find(
            &rows,
            "vllm/doctor+bias=patient_distrust+turns=10",
            "dialogue",
            "rule",
            "delta_bias",
            "all"
        )
        .is_empty()
    );
    assert!(find(&rows, "vllm/doctor", "dialogue", "rule", "delta_bias", "all").is_empty());
    // Options in another order name the same peer.
    assert_eq!(
        find(
            &rows,
            "vllm/doctor+turns=20+bias=doctor_race+reflect",
            "dialogue",
            "rule",
            "delta_bias",
            "all"
        )
        .len(),
        2
    );
}
