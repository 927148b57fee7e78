//! Power curve of `cfeval power`: simulated power against the number of
//! cases (log scale), one line per scope (overall in bold, then each
//! family), the target power as a dashed line and a point where each line
//! reaches it. Where the test over-rejects (its type I error too high for
//! the power to count) a line is dotted.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{Figure, GRID, INK, MUTED, PALETTE, fixed, mark, text};
use crate::error::Result;
use crate::escape;

/// One scope's curve.
#[derive(Debug, Clone)]
pub struct PowerLine {
    /// `overall` or `family A`.
    pub label: String,
    /// The overall line (drawn bold, in ink).
    pub overall: bool,
    /// (cases, power, whether the test over-rejects there), by cases.
    pub points: Vec<(u64, f64, bool)>,
    /// The number of cases found and its power (none: not reached).
    pub reached: Option<(u64, f64)>,
}

const WIDTH: u32 = 900;
const HEIGHT: u32 = 520;
const LEGEND: u32 = 200;

/// Tick values 1, 2, 5 × 10^k within `[low, high]`.
fn ticks(low: f64, high: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 1.0;
    while decade <= high {
        for step in [1.0, 2.0, 5.0] {
            let value = step * decade;
            if value >= low && value <= high {
                out.push(value);
            }
        }
        decade *= 10.0;
    }
    out
}

fn count_label(value: f64) -> String {
    if value >= 1_000_000.0 {
        format!("{}M", value / 1_000_000.0)
    } else if value >= 1_000.0 {
        format!("{}k", value / 1_000.0)
    } else {
        format!("{value}")
    }
}

/// The colour of line `index` (the overall line is ink).
fn line_color(line: &PowerLine, index: usize) -> RGBColor {
    if line.overall {
        INK
    } else {
        let (r, g, b) = PALETTE[index % PALETTE.len()];
        RGBColor(r, g, b)
    }
}

/// Draws the power curves of `lines` (at least one point among them)
/// against the target power `target`.
pub fn power_curve(id: &str, title: &str, target: f64, lines: &[PowerLine]) -> Result<Figure> {
    let (low, high) = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|&(cases, ..)| cases as f64))
        .fold((f64::INFINITY, 0.0_f64), |(low, high), cases| {
            (low.min(cases), high.max(cases))
        });
    let (low, high) = if low.is_finite() {
        (low.max(1.0), high.max(low * 2.0))
    } else {
        (1.0, 10.0)
    };
    let mut figure = Figure {
        id: id.to_string(),
        kind: "power",
        width: WIDTH,
        height: HEIGHT,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    // Pixel positions of each line's points (with the over-rejection flag)
    // and of its point at the target.
    type Placed = (Vec<((i32, i32), bool)>, Option<(i32, i32)>);
    let placed: Vec<Placed>;
    (figure.frame, placed) = super::layer(id, (WIDTH, HEIGHT), |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(20)
            .margin_top(36)
            .margin_right(LEGEND)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d((low..high).log_scale(), 0.0..1.0)?;
        super::quiet_mesh(&mut chart.configure_mesh())
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_labels(6)
            .y_label_formatter(&|value| fixed(*value, 1))
            .x_desc("cases (log scale)")
            .y_desc("simulated power")
            .draw()?;
        for tick in ticks(low, high) {
            let top = chart.backend_coord(&(tick, 1.0));
            let bottom = chart.backend_coord(&(tick, 0.0));
            area.draw(&PathElement::new(vec![top, bottom], GRID.stroke_width(1)))?;
            area.draw(&Text::new(
                count_label(tick),
                (bottom.0, bottom.1 + 8),
                text(11.0, INK, HPos::Center, VPos::Top),
            ))?;
        }
        let left = chart.backend_coord(&(low, target));
        let right = chart.backend_coord(&(high, target));
        area.draw(&DashedPathElement::new(
            vec![left, right],
            6,
            4,
            MUTED.stroke_width(2),
        ))?;
        area.draw(&Text::new(
            format!("target {}", fixed(target, 2)),
            (left.0 + 6, left.1 - 4),
            text(11.0, MUTED, HPos::Left, VPos::Bottom),
        ))?;
        super::draw_title(area, title)?;
        // The legend, right of the plot.
        let legend_x = (WIDTH - LEGEND) as i32 + 16;
        for (index, line) in lines.iter().enumerate() {
            let reached = match line.reached {
                Some((cases, _)) => format!("n = {cases}"),
                None => "not reached".into(),
            };
            let width = if line.overall { 3 } else { 2 };
            let label = format!("{}: {reached}", line.label);
            super::legend_line(area, legend_x, index, line_color(line, index), width, &label)?;
        }
        if lines
            .iter()
            .any(|line| line.points.iter().any(|&(.., over)| over))
        {
            let y = 56 + 22 * lines.len() as i32 + 8;
            area.draw(&DashedPathElement::new(
                vec![(legend_x, y), (legend_x + 24, y)],
                2,
                3,
                MUTED.stroke_width(2),
            ))?;
            area.draw(&Text::new(
                "the test over-rejects",
                (legend_x + 32, y),
                text(11.0, MUTED, HPos::Left, VPos::Center),
            ))?;
        }
        Ok(lines
            .iter()
            .map(|line| {
                let path = line
                    .points
                    .iter()
                    .map(|&(cases, power, over)| {
                        (chart.backend_coord(&(cases as f64, power.clamp(0.0, 1.0))), over)
                    })
                    .collect();
                let point = line
                    .reached
                    .map(|(cases, power)| chart.backend_coord(&(cases as f64, power.clamp(0.0, 1.0))));
                (path, point)
            })
            .collect())
    })?;
    for (index, (line, (path, point))) in lines.iter().zip(placed).enumerate() {
        let color = line_color(line, index);
        let tooltip = match line.reached {
            Some((cases, power)) => format!(
                "{}: power {} with {cases} cases (target {})",
                line.label,
                fixed(power, 3),
                fixed(target, 2)
            ),
            None => format!(
                "{}: target {} not reached within {} cases",
                line.label,
                fixed(target, 2),
                line.points.last().map_or(0, |&(cases, ..)| cases)
            ),
        };
        let width = if line.overall { 3 } else { 2 };
        let drawn = mark(&figure, &line.label, false, tooltip, |area| {
            // Solid where the test holds its level, dotted where a segment
            // touches a point where it over-rejects.
            for pair in path.windows(2) {
                let (from, to) = ((pair[0].0), (pair[1].0));
                if pair[0].1 || pair[1].1 {
                    area.draw(&DashedPathElement::new(
                        vec![from, to],
                        2,
                        3,
                        color.stroke_width(width),
                    ))?;
                } else {
                    area.draw(&PathElement::new(vec![from, to], color.stroke_width(width)))?;
                }
            }
            if let Some(point) = point {
                area.draw(&Circle::new(point, 5, color.filled()))?;
                area.draw(&Circle::new(point, 5, WHITE.stroke_width(1)))?;
            }
            Ok(())
        })?;
        figure.marks.push(drawn);
    }
    Ok(figure)
}

/// `figure` as a standalone SVG document (what `figure.svg.j2` puts in a
/// page, with the SVG namespace): frame, then each mark with its tooltip.
pub fn svg_document(figure: &Figure) -> String {
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\" class=\"plot plot-{kind}\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{title}\" data-marks=\"{marks}\">\n<title>{title}</title>\n\
         <g class=\"frame\">\n{frame}</g>\n<g class=\"marks\">\n",
        id = escape(&figure.id),
        kind = figure.kind,
        width = figure.width,
        height = figure.height,
        title = escape(&figure.title),
        marks = figure.marks.len(),
        frame = figure.frame,
    );
    for mark in &figure.marks {
        out.push_str(&format!(
            "<g class=\"mark{}\" data-subject=\"{}\"><title>{}</title>\n{}</g>\n",
            if mark.control { " control" } else { "" },
            escape(&mark.subject),
            escape(&mark.tooltip),
            mark.body
        ));
    }
    out.push_str("</g>\n</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<PowerLine> {
        vec![
            PowerLine {
                label: "overall".into(),
                overall: true,
                points: vec![
                    (2, 0.6, true),
                    (10, 0.3, false),
                    (40, 0.81, false),
                    (80, 0.97, false),
                ],
                reached: Some((40, 0.81)),
            },
            PowerLine {
                label: "family <A>".into(),
                overall: false,
                points: vec![
                    (2, 0.04, false),
                    (10, 0.1, false),
                    (40, 0.3, false),
                    (80, 0.5, false),
                ],
                reached: None,
            },
        ]
    }

    #[test]
    fn the_document_is_one_svg_with_a_mark_per_line_and_the_target() {
        let figure = power_curve("power", "Power & cases", 0.8, &lines()).expect("figure");
        assert_eq!(figure.marks.len(), 2);
        let svg = svg_document(&figure);
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{svg}"
        );
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), 1, "one document");
        // The target: a label and a dashed line (plotters draws the dashes
        // as short segments in the muted grey).
        assert!(svg.contains("target 0.80"));
        let dashes = svg
            .matches("<polyline fill=\"none\" opacity=\"1\" stroke=\"#6B7280\" stroke-width=\"2\"")
            .count();
        assert!(dashes >= 10, "{dashes} dashes");
        assert!(svg.contains("Power &amp; cases") && svg.contains("family &lt;A&gt;: not reached"));
        assert!(svg.contains("overall: n = 40"));
        assert!(
            svg.contains("the test over-rejects"),
            "the dotted stretch is explained"
        );
        assert!(svg.contains("power 0.810 with 40 cases"));
        for label in ["10", "20", "50"] {
            assert!(svg.contains(&format!(">\n{label}\n</text>")), "tick {label}");
        }
    }

    #[test]
    fn ticks_are_one_two_five_per_decade() {
        assert_eq!(
            ticks(2.0, 600.0),
            [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
        );
        assert_eq!(count_label(20_000.0), "20k");
        assert_eq!(count_label(50.0), "50");
    }

    #[test]
    fn the_same_lines_draw_the_same_document() {
        let first = svg_document(&power_curve("power", "t", 0.8, &lines()).expect("figure"));
        let second = svg_document(&power_curve("power", "t", 0.8, &lines()).expect("figure"));
        assert_eq!(first, second);
    }
}
