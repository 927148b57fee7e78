//! CSS against the spurious-shift rate, one point per subject: responsive and
//! stable subjects sit in the top-left corner.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{BAD, Figure, GOOD, INK, MUTED, fixed, mark, subject_color, subject_label, text, text_with};
use crate::error::Result;

/// One subject's point.
#[derive(Debug, Clone)]
pub struct ScatterPoint {
    pub subject: String,
    pub control: bool,
    pub color: (u8, u8, u8),
    pub css: f64,
    pub css_interval: Option<(f64, f64)>,
    pub spurious: f64,
    pub spurious_interval: Option<(f64, f64)>,
}

const WIDTH: u32 = 800;
const HEIGHT: u32 = 540;

/// Pixel positions of one point and its intervals.
struct Place {
    point: (i32, i32),
    horizontal: Option<((i32, i32), (i32, i32))>,
    vertical: Option<((i32, i32), (i32, i32))>,
}

/// Draws the scatter plot of `points` (at least one).
pub fn scatter(id: &str, title: &str, control_family: &str, points: &[ScatterPoint]) -> Result<Figure> {
    let largest = points
        .iter()
        .map(|point| {
            point
                .spurious_interval
                .map_or(point.spurious, |(_, high)| high.max(point.spurious))
        })
        .fold(0.0_f64, f64::max);
    let x_max = ((largest * 1.15 / 0.05).ceil() * 0.05).clamp(0.2, 1.0);
    let mut figure = Figure {
        id: id.to_string(),
        kind: "scatter",
        width: WIDTH,
        height: HEIGHT,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    let places;
    (figure.frame, places) = super::layer(id, (WIDTH, HEIGHT), |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(20)
            .margin_top(40)
            .margin_right(40)
            .x_label_area_size(48)
            .y_label_area_size(60)
            .build_cartesian_2d(-x_max * 0.03..x_max, -0.03..1.03)?;
        super::quiet_mesh(&mut chart.configure_mesh())
            .x_labels(6)
            .y_labels(6)
            .x_label_formatter(&|value| fixed(*value, 2))
            .y_label_formatter(&|value| fixed(*value, 1))
            .x_desc(format!(
                "spurious-shift rate on family {control_family} (lower is stable)"
            ))
            .y_desc("CSS (higher is responsive)")
            .draw()?;
        let middle = x_max / 2.0;
        let guide = MUTED.stroke_width(1);
        area.draw(&DashedPathElement::new(
            vec![
                chart.backend_coord(&(middle, 0.0)),
                chart.backend_coord(&(middle, 1.0)),
            ],
            5,
            5,
            guide,
        ))?;
        area.draw(&DashedPathElement::new(
            vec![
                chart.backend_coord(&(0.0, 0.5)),
                chart.backend_coord(&(x_max, 0.5)),
            ],
            5,
            5,
            guide,
        ))?;
        // Top corners above the frame (points crowd the top left), bottom ones inside it.
        let (left, above) = chart.backend_coord(&(0.0, 1.03));
        let (right, bottom) = chart.backend_coord(&(x_max, 0.0));
        let (top, bottom) = (above - 12, bottom - 14);
        let corners = [
            (
                "responsive and stable",
                (left, top),
                HPos::Left,
                GOOD,
                FontStyle::Bold,
            ),
            (
                "responsive, unstable",
                (right, top),
                HPos::Right,
                MUTED,
                FontStyle::Normal,
            ),
            (
                "stable, unresponsive",
                (left + 10, bottom),
                HPos::Left,
                MUTED,
                FontStyle::Normal,
            ),
            (
                "unresponsive and unstable",
                (right - 10, bottom),
                HPos::Right,
                BAD,
                FontStyle::Bold,
            ),
        ];
        for (label, at, h, color, style) in corners {
            area.draw(&Text::new(
                label,
                at,
                text_with(12.0, style, color, h, VPos::Center),
            ))?;
        }
        Ok(points
            .iter()
            .map(|point| {
                let x = point.spurious.clamp(0.0, x_max);
                let y = point.css.clamp(0.0, 1.0);
                Place {
                    point: chart.backend_coord(&(x, y)),
                    horizontal: point.spurious_interval.map(|(low, high)| {
                        (
                            chart.backend_coord(&(low.clamp(0.0, x_max), y)),
                            chart.backend_coord(&(high.clamp(0.0, x_max), y)),
                        )
                    }),
                    vertical: point.css_interval.map(|(low, high)| {
                        (
                            chart.backend_coord(&(x, low.clamp(0.0, 1.0))),
                            chart.backend_coord(&(x, high.clamp(0.0, 1.0))),
                        )
                    }),
                }
            })
            .collect::<Vec<_>>())
    })?;
    for (point, place) in points.iter().zip(places) {
        let color = subject_color(point.color, point.control);
        let label = subject_label(&point.subject, point.control);
        let tooltip = format!(
            "{label}: CSS {}, spurious-shift rate {}",
            fixed(point.css, 3),
            fixed(point.spurious, 3)
        );
        let drawn = mark(&figure, &point.subject, point.control, tooltip, |area| {
            for (from, to) in [place.horizontal, place.vertical].into_iter().flatten() {
                area.draw(&PathElement::new(vec![from, to], color.mix(0.45).stroke_width(2)))?;
            }
            if point.control {
                area.draw(&Circle::new(place.point, 7, WHITE.filled()))?;
                area.draw(&Circle::new(place.point, 7, color.stroke_width(2)))?;
            } else {
                area.draw(&Circle::new(place.point, 7, color.filled()))?;
            }
            let (x, anchor) = if place.point.0 > WIDTH as i32 * 2 / 3 {
                (place.point.0 - 12, HPos::Right)
            } else {
                (place.point.0 + 12, HPos::Left)
            };
            area.draw(&Text::new(
                label.clone(),
                (x, place.point.1 - 10),
                text(12.0, INK, anchor, VPos::Center),
            ))?;
            Ok(())
        })?;
        figure.marks.push(drawn);
    }
    Ok(figure)
}
