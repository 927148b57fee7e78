//! The report of synthetic runs: files, plots and their marks, controls,
//! tables, "not available" notes, determinism.

use cfeval_aggregate::synthetic::Shape;

use crate::support::{FAMILIES, SUBJECTS, aggregate, config, controls, full_run, marks, shape, svg};

const CONTROLS: usize = 2;

#[test]
fn every_plot_has_one_mark_per_subject_cell_or_interval() {
    let dir = full_run();
    let paths = cfeval_report::write(dir.path()).expect("report");
    assert_eq!(paths.html, dir.path().join("report.html"));
    assert_eq!(paths.markdown, dir.path().join("report.md"));
    let html = std::fs::read_to_string(&paths.html).expect("html");
    if let Some(keep) = std::env::var_os("CFEVAL_REPORT_KEEP") {
        std::fs::copy(&paths.html, std::path::Path::new(&keep).join("report.html")).expect("keep html");
        std::fs::copy(&paths.markdown, std::path::Path::new(&keep).join("report.md")).expect("keep md");
    }
    let per_subject = FAMILIES.len() + 1;
    for mode in ["single-shot", "agent"] {
        let slope = svg(&html, &format!("slope-{mode}"));
        assert_eq!(marks(slope), SUBJECTS.len(), "one line per subject");
        assert_eq!(controls(slope), CONTROLS);
        // Families A–E and the spurious-shift column N.
        let heatmap = svg(&html, &format!("heatmap-{mode}"));
        assert_eq!(marks(heatmap), SUBJECTS.len() * per_subject);
        assert_eq!(controls(heatmap), CONTROLS * per_subject);
        assert_eq!(
            heatmap.matches("\nblind spot\n").count(),
            1,
            "family D is a blind spot"
        );
        // Overall and per family (A–E).
        let forest = svg(&html, &format!("forest-{mode}"));
        assert_eq!(marks(forest), SUBJECTS.len() * per_subject);
        assert_eq!(controls(forest), CONTROLS * per_subject);
        let scatter = svg(&html, &format!("scatter-{mode}"));
        assert_eq!(marks(scatter), SUBJECTS.len());
        assert!(scatter.contains("responsive and stable"));
        for (subject, _) in SUBJECTS {
            assert!(
                slope.contains(&format!("data-subject=\"{subject}\"")),
                "{subject}"
            );
        }
    }
}

#[test]
fn the_page_is_self_contained_and_marks_controls() {
    let dir = full_run();
    let paths = cfeval_report::write(dir.path()).expect("report");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    for banned in [
        "http://", "https://", "<script", "<link", "@import", "url(", "src=",
    ] {
        assert!(!html.contains(banned), "report.html contains {banned}");
    }
    for (subject, control) in SUBJECTS {
        let marked = format!("{subject}<span class=\"badge\">control</span>");
        assert_eq!(html.contains(&marked), control, "{subject}");
        let labelled = format!("{subject} (control)");
        assert_eq!(html.contains(&labelled), control, "{subject} in the plots");
    }
    assert!(html.contains("Family D: every subject under test is below the threshold"));
    assert!(html.contains("Spearman ρ between CMS and CSS ranks"));
    assert!(html.contains("The CSS ranking differs from the CMS ranking in"));
    assert!(html.contains("Rank-swap probability per pair"));
    assert!(html.contains("Pairs left out of the estimates per family"));
    assert!(
        html.contains("rule vs openai/gpt-5.4") || html.contains("openai/gpt-5.4 vs rule"),
        "cross-judge agreement"
    );
    assert!(
        html.contains("catalog-synthetic"),
        "catalog hash in the provenance"
    );
    assert!(
        html.contains("prompt-rule"),
        "judge prompt hash in the provenance"
    );
    assert!(html.contains("no human labels imported"));
}

#[test]
fn markdown_carries_the_tables_blind_spots_and_provenance() {
    let dir = full_run();
    let paths = cfeval_report::write(dir.path()).expect("report");
    let markdown = std::fs::read_to_string(&paths.markdown).expect("md");
    for heading in [
        "# Counterfactual evaluation report: report-test",
        "## Single-shot (judge openai/gpt-5.4)",
        "## Agent (judge openai/gpt-5.4)",
        "## Blind spots",
        "## Agreement",
        "## Agent vs single-shot",
        "## Provenance",
    ] {
        assert!(markdown.contains(heading), "{heading}");
    }
    assert!(markdown.contains(
        "| Subject | CSS (A–E) | CSS family-balanced | CMS | Spurious shift | Cases | CSS tuples | \
         Uncertain | Truncated / refused |"
    ));
    assert!(markdown.contains("| Subject | A | B | C | D (blind spot) | E | N (spurious shift) |"));
    assert!(markdown.contains("| control/reference (control) |"));
    assert!(markdown.contains("- Family D: every subject under test is below the threshold"));
    assert!(markdown.contains(
        "| Subject | CMS | CMS rank | CSS | CSS rank | Swap | P(CSS rank ≠ CMS rank) | \
         P(first under CMS) | P(first under CSS) |"
    ));
    assert!(markdown.contains("| Subject | Other subject | Higher CMS | Higher CSS | P(swap) |"));
    assert!(markdown.contains("| Subject | A | B | C | D | E | N | Baseline (CMS) |"));
    assert!(markdown.contains("| Raters | Group | κ | Interval | κ linear | κ quadratic | Tuples |"));
    assert!(markdown.contains("- **Catalog hash:** catalog-synthetic"));
    // Every table line has as many cells as its header.
    for block in markdown.split("\n\n").filter(|block| block.starts_with("| ")) {
        let widths: Vec<usize> = block.lines().map(|line| line.matches(" |").count()).collect();
        assert!(widths.windows(2).all(|pair| pair[0] == pair[1]), "{block}");
    }
}

#[test]
fn the_same_run_gives_byte_identical_reports() {
    let dir = full_run();
    let first = cfeval_report::write(dir.path()).expect("report");
    let html = std::fs::read(&first.html).expect("html");
    let markdown = std::fs::read(&first.markdown).expect("md");
    let second = cfeval_report::write(dir.path()).expect("report again");
    assert_eq!(std::fs::read(&second.html).expect("html"), html);
    assert_eq!(std::fs::read(&second.markdown).expect("md"), markdown);
    let other = full_run();
    let elsewhere = cfeval_report::write(other.path()).expect("report of a rerun");
    assert_eq!(std::fs::read(&elsewhere.html).expect("html"), html);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("report"))
        .collect();
    assert_eq!(names.len(), 2, "no temp files left: {names:?}");
}

#[test]
fn an_empty_run_says_not_available() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = cfeval_report::write(dir.path()).expect("report");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    let markdown = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(html.contains("<strong>Not available:</strong> this run has no scores yet"));
    assert!(!html.contains("<svg"), "no plots without scores");
    assert!(markdown.contains("_Not available: this run has no scores yet"));
    assert!(
        markdown
            .contains("_Not available: Judges (from the judgments table) — no judgments table in this run._")
    );
    assert!(!dir.path().join("scores").exists(), "reading creates no tables");
}

#[test]
fn a_missing_run_folder_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-run");
    let error = cfeval_report::write(&missing).expect_err("missing folder");
    assert!(format!("{error}").contains("no-such-run"), "{error}");
}

#[test]
fn one_subject_one_judge_no_family_n_no_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut single: Shape = shape(&["single_shot"]);
    single.subjects.truncate(1);
    single.judges.truncate(1);
    single.interventions.retain(|(_, family)| family != "N");
    aggregate(&single, dir.path());
    let paths = cfeval_report::write(dir.path()).expect("report");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    assert!(
        html.contains("Rank slope: CMS → CSS — needs at least two subjects with both CMS and CSS (1 here)")
    );
    assert!(html.contains("no spurious-shift rates: the run has no negative-control family (N)"));
    assert!(html.contains("one judge only"));
    assert!(html.contains("no agent mode in this run"));
    assert_eq!(marks(svg(&html, "heatmap-single-shot")), FAMILIES.len());
    assert_eq!(marks(svg(&html, "forest-single-shot")), FAMILIES.len() + 1);
    assert!(!html.contains("id=\"slope-"));
    assert!(!html.contains("id=\"scatter-"));
}

#[test]
fn judgments_without_scores_still_give_provenance() {
    let dir = tempfile::tempdir().expect("tempdir");
    cfeval_aggregate::synthetic::write_judgments(&shape(&["single_shot"]), dir.path()).expect("judgments");
    let paths = cfeval_report::write(dir.path()).expect("report");
    let markdown = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(markdown.contains("_Not available: this run has no scores yet"));
    assert!(markdown.contains("| rule | 1560 | 0 | prompt-rule | catalog-synthetic |"));
}

#[test]
fn aggregate_settings_show_in_the_provenance() {
    let dir = full_run();
    let paths =
        cfeval_report::write_with(dir.path(), &cfeval_report::Settings::from(&config())).expect("report");
    let markdown = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(markdown.contains(
        "- **Bootstrap:** 200 paired resamples (cases drawn once per replicate for every family, \
         subject, mode and judge), seed 5, 95% intervals"
    ));
    assert!(markdown.contains(
        "Best CSS per family among the subjects under test, with its 95% interval (threshold 0.35)"
    ));
}
