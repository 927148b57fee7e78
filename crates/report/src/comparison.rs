//! The report of `cfeval compare`: `comparison.md` and `comparison.html`
//! from the rows of a comparison ([`cfeval_schema::ComparisonRow`]).
//!
//! Both hold the header (runs, pack, catalog, judge, matched and unpaired
//! tuples), the table of paired differences B − A with their intervals,
//! tuple outcomes and McNemar p-values, and the regressed tuples. The HTML
//! page adds a forest plot of the differences (one row per subject, mode,
//! metric and group; the x axis from −1 to 1, zero marked), drawn as a
//! small hand-written SVG: the run report's forest plot is on the CSS
//! scale [0, 1] and colours subjects, neither of which fits a difference.
//! Self-contained (no script, font or network resource); the same rows give
//! byte-identical files.

use std::fmt::Write as _;
use std::path::Path;

use cfeval_aggregate::compare::Report;
use cfeval_schema::ComparisonRow;

use crate::{ReportPaths, Result, escape, write_atomic};

/// File name of the comparison's HTML page inside its folder.
pub const HTML_FILE: &str = "comparison.html";
/// File name of the comparison's Markdown report inside its folder.
pub const MARKDOWN_FILE: &str = "comparison.md";

/// Writes `comparison.md` and `comparison.html` into `out` (which must exist).
pub fn write(out: &Path, report: &Report, rows: &[ComparisonRow]) -> Result<ReportPaths> {
    let paths = ReportPaths {
        html: out.join(HTML_FILE),
        markdown: out.join(MARKDOWN_FILE),
    };
    write_atomic(&paths.markdown, markdown(report, rows).as_bytes())?;
    write_atomic(&paths.html, html(report, rows).as_bytes())?;
    Ok(paths)
}

/// The estimate rows (overall and family), in table order.
fn estimates(rows: &[ComparisonRow]) -> Vec<&ComparisonRow> {
    rows.iter()
        .filter(|row| row.level == "overall" || row.level == "family")
        .collect()
}

fn number(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(value) if value.is_finite() => format!("{value:.digits$}"),
        _ => "–".into(),
    }
}

fn p_value(value: Option<f64>) -> String {
    match value {
        Some(value) if value < 1e-4 => format!("{value:.1e}"),
        value => number(value, 4),
    }
}

fn interval(row: &ComparisonRow) -> String {
    match (row.ci_low, row.ci_high) {
        (Some(low), Some(high)) => format!("[{low:+.3}, {high:+.3}]"),
        _ => "–".into(),
    }
}

fn what(row: &ComparisonRow) -> String {
    if row.level == "overall" {
        format!("{} overall", row.metric)
    } else {
        format!("{}, family {}", row.metric, row.group)
    }
}

fn summary_lines(report: &Report) -> Vec<String> {
    let mut lines = vec![
        format!("Run A: `{}` ({})", report.run_a, report.dir_a.display()),
        format!("Run B: `{}` ({})", report.run_b, report.dir_b.display()),
        format!(
            "Pack: {}; catalog {}; judge `{}`",
            report.pack, report.catalog_hash, report.judge
        ),
        format!(
            "Tuples both runs decided: {} (CSS pairs and negative controls among them: {} fixed, {} regressed, {} same; the rest are CMS)",
            report.matched, report.fixed, report.regressed, report.same
        ),
        format!(
            "Not paired: {} judged in A only, {} in B only, {} decided in at most one run",
            report.only_a, report.only_b, report.undecided
        ),
        format!(
            "Intervals: {:.0}% percentile, paired case bootstrap ({} resamples)",
            100.0 * report.level,
            report.resamples
        ),
    ];
    if report.samples_left_out > 0 {
        lines.push(format!(
            "Samples only one run has (not compared): {}",
            report.samples_left_out
        ));
    }
    for one in &report.one_sided {
        lines.push(format!(
            "`{}` ({}) is only in run `{}` ({} tuples, not compared)",
            one.subject, one.mode, one.run, one.tuples
        ));
    }
    lines
}

/// `comparison.md`.
pub fn markdown(report: &Report, rows: &[ComparisonRow]) -> String {
    let mut out = format!("# Comparison: `{}` → `{}`\n\n", report.run_a, report.run_b);
    for line in summary_lines(report) {
        let _ = writeln!(out, "- {line}");
    }
    out.push_str("\n## Differences B − A\n\n");
    out.push_str(
        "| subject | mode | estimate | A | B | B − A | interval | cases | tuples | fixed | regressed | same | McNemar p |\n",
    );
    out.push_str(
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for row in estimates(rows) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&row.subject),
            row.mode,
            what(row),
            number(row.a_value, 3),
            number(row.b_value, 3),
            number(row.difference, 3),
            interval(row),
            row.n_cases,
            row.n_tuples,
            row.fixed,
            row.regressed,
            row.same,
            p_value(row.mcnemar_p)
        );
    }
    let regressed: Vec<&ComparisonRow> = rows.iter().filter(|row| row.metric == "regressed").collect();
    let _ = write!(out, "\n## Regressed tuples ({})\n\n", regressed.len());
    if regressed.is_empty() {
        out.push_str("None.\n");
    } else {
        out.push_str("| subject | mode | case | intervention | sample | A | B |\n");
        out.push_str("| --- | --- | --- | --- | ---: | ---: | ---: |\n");
        for row in regressed {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&row.subject),
                row.mode,
                cell(row.case_id.as_deref().unwrap_or_default()),
                cell(row.intervention.as_deref().unwrap_or_default()),
                row.sample.unwrap_or_default(),
                number(row.a_value, 1),
                number(row.b_value, 1)
            );
        }
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

const WIDTH: f64 = 900.0;
const LABEL: f64 = 360.0;
const VALUE: f64 = 170.0;
const ROW: f64 = 22.0;

/// The forest plot of the differences, as an `<svg>` element.
pub fn forest(rows: &[&ComparisonRow]) -> String {
    let top = 16.0;
    let height = top + ROW * rows.len() as f64 + 40.0;
    let plot_left = LABEL;
    let plot_right = WIDTH - VALUE;
    let x = |value: f64| plot_left + (value.clamp(-1.0, 1.0) + 1.0) / 2.0 * (plot_right - plot_left);
    let mut svg = format!(
        "<svg class=\"plot plot-forest\" id=\"forest-differences\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\">\
         <title>Differences B − A with their intervals</title>\n"
    );
    let bottom = top + ROW * rows.len() as f64;
    for tick in [-1.0, -0.5, 0.0, 0.5, 1.0] {
        let position = x(tick);
        let (stroke, dash) = if tick == 0.0 {
            ("#334155", "")
        } else {
            ("#e2e8f0", " stroke-dasharray=\"3 3\"")
        };
        let _ = writeln!(
            svg,
            "<line x1=\"{position:.1}\" y1=\"{top}\" x2=\"{position:.1}\" y2=\"{bottom}\" stroke=\"{stroke}\"{dash}/>\
             <text x=\"{position:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#64748b\">{tick:+.1}</text>",
            bottom + 16.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#64748b\">B − A (worse ← → better for CSS and CMS; the reverse for spurious shift)</text>",
        (plot_left + plot_right) / 2.0,
        bottom + 34.0
    );
    for (index, row) in rows.iter().enumerate() {
        let y = top + ROW * (index as f64 + 0.5);
        let label = format!("{} · {} · {}", row.subject, row.mode, what(row));
        let excludes_zero =
            matches!((row.ci_low, row.ci_high), (Some(low), Some(high)) if low > 0.0 || high < 0.0);
        let color = if excludes_zero { "#b91c1c" } else { "#1e3a8a" };
        let tooltip = format!(
            "{label}: {} {} (A {}, B {}; McNemar p {})",
            number(row.difference, 3),
            interval(row),
            number(row.a_value, 3),
            number(row.b_value, 3),
            p_value(row.mcnemar_p)
        );
        let _ = write!(
            svg,
            "<g class=\"mark\"><title>{}</title><text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"11\" text-anchor=\"end\" dominant-baseline=\"middle\" fill=\"#0f172a\">{}</text>",
            escape(&tooltip),
            LABEL - 12.0,
            escape(&label)
        );
        if let (Some(low), Some(high)) = (row.ci_low, row.ci_high) {
            let _ = write!(
                svg,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"2\"/>",
                x(low),
                x(high)
            );
        }
        if let Some(value) = row.difference.filter(|value| value.is_finite()) {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{color}\"/>",
                x(value)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"11\" dominant-baseline=\"middle\" fill=\"#334155\">{} {}</text></g>",
            plot_right + 12.0,
            number(row.difference, 3),
            interval(row)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// `comparison.html`.
pub fn html(report: &Report, rows: &[ComparisonRow]) -> String {
    let estimates = estimates(rows);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Comparison: {a} → {b}</title>\
         <style>body{{font-family:system-ui,sans-serif;margin:2em;color:#0f172a}}table{{border-collapse:collapse;font-size:13px}}\
         td,th{{border:1px solid #e2e8f0;padding:2px 8px;text-align:right}}td:nth-child(-n+3),th:nth-child(-n+3){{text-align:left}}</style>\
         </head><body>\n<h1>Comparison: {a} → {b}</h1>\n<ul>\n",
        a = escape(&report.run_a),
        b = escape(&report.run_b)
    );
    for line in summary_lines(report) {
        let _ = writeln!(out, "<li>{}</li>", escape(&line.replace('`', "")));
    }
    out.push_str("</ul>\n<h2>Differences B − A</h2>\n");
    if estimates.is_empty() {
        out.push_str("<p>Not available: the runs share no decided tuple.</p>\n");
    } else {
        out.push_str(&forest(&estimates));
        out.push_str(
            "<table><tr><th>subject</th><th>mode</th><th>estimate</th><th>A</th><th>B</th><th>B − A</th><th>interval</th>\
             <th>cases</th><th>tuples</th><th>fixed</th><th>regressed</th><th>same</th><th>McNemar p</th></tr>\n",
        );
        for row in &estimates {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&row.subject),
                escape(&row.mode),
                escape(&what(row)),
                number(row.a_value, 3),
                number(row.b_value, 3),
                number(row.difference, 3),
                interval(row),
                row.n_cases,
                row.n_tuples,
                row.fixed,
                row.regressed,
                row.same,
                p_value(row.mcnemar_p)
            );
        }
        out.push_str("</table>\n");
    }
    let regressed: Vec<&ComparisonRow> = rows.iter().filter(|row| row.metric == "regressed").collect();
    let _ = writeln!(out, "<h2>Regressed tuples ({})</h2>", regressed.len());
    if regressed.is_empty() {
        out.push_str("<p>None.</p>\n");
    } else {
        out.push_str("<table><tr><th>subject</th><th>mode</th><th>case</th><th>intervention</th><th>sample</th><th>A</th><th>B</th></tr>\n");
        for row in regressed {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&row.subject),
                escape(&row.mode),
                escape(row.case_id.as_deref().unwrap_or_default()),
                escape(row.intervention.as_deref().unwrap_or_default()),
                row.sample.unwrap_or_default(),
                number(row.a_value, 1),
                number(row.b_value, 1)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: &str, difference: f64, interval: (f64, f64)) -> ComparisonRow {
        ComparisonRow {
            run_a: "a".into(),
            run_b: "b".into(),
            judge: "rule".into(),
            subject: "vllm/<m>".into(),
            mode: "single_shot".into(),
            level: "family".into(),
            group: group.into(),
            metric: "css".into(),
            case_id: None,
            intervention: None,
            sample: None,
            a_value: Some(0.9),
            b_value: Some(0.9 + difference),
            difference: Some(difference),
            ci_low: Some(interval.0),
            ci_high: Some(interval.1),
            n_cases: 10,
            n_tuples: 12,
            fixed: 0,
            regressed: 3,
            same: 9,
            mcnemar_p: Some(0.25),
        }
    }

    #[test]
    fn the_page_escapes_names_and_marks_intervals_that_exclude_zero() {
        let rows = [row("D", -0.5, (-0.8, -0.2)), row("A", 0.0, (0.0, 0.0))];
        let report = Report {
            run_a: "a".into(),
            run_b: "b".into(),
            ..Report::default()
        };
        let page = html(&report, &rows);
        assert!(page.contains("vllm/&lt;m&gt;") && !page.contains("vllm/<m>"));
        assert_eq!(page.matches("<g class=\"mark\">").count(), 2);
        assert_eq!(
            page.matches("stroke=\"#b91c1c\"").count(),
            1,
            "only family D excludes 0"
        );
        let text = markdown(&report, &rows);
        assert!(
            text.contains("| css, family D | 0.900 | 0.400 | -0.500 | [-0.800, -0.200] |"),
            "{text}"
        );
    }
}
