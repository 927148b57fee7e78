//! Forest plot: CSS with its 95% interval, one row per subject (overall, in
//! bold) and per family below it.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{Figure, INK, MUTED, fixed, mark, subject_color, subject_label, text, text_with};
use crate::error::Result;

/// One interval of the forest plot.
#[derive(Debug, Clone)]
pub struct ForestRow {
    pub subject: String,
    pub control: bool,
    pub color: (u8, u8, u8),
    /// `None` for the subject's overall row, else the family.
    pub family: Option<String>,
    pub value: f64,
    pub interval: Option<(f64, f64)>,
}

const WIDTH: u32 = 900;
const LABEL_WIDTH: u32 = 300;
const VALUE_WIDTH: u32 = 150;
const ROW: u32 = 22;
const AXIS: u32 = 44;

/// Where one row's mark goes, in pixels.
struct Place {
    y: i32,
    value: i32,
    interval: Option<(i32, i32)>,
}

/// Draws the forest plot of `rows` (at least one), top to bottom.
pub fn forest(id: &str, title: &str, rows: &[ForestRow]) -> Result<Figure> {
    let count = rows.len();
    let height = 16 + ROW * count as u32 + AXIS;
    let mut figure = Figure {
        id: id.to_string(),
        kind: "forest",
        width: WIDTH,
        height,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    let row_value = |row: usize| (count - row) as f64 - 0.5;
    let places;
    (figure.frame, places) = super::layer(id, (WIDTH, height), |area| {
        let mut chart = ChartBuilder::on(area)
            .margin_top(16)
            .margin_left(LABEL_WIDTH)
            .margin_right(VALUE_WIDTH)
            .x_label_area_size(AXIS)
            .build_cartesian_2d(0.0..1.0, 0.0..count as f64)?;
        // Bands behind each subject's rows, alternating.
        let mut band = 0;
        for (row, entry) in rows.iter().enumerate() {
            if entry.family.is_none() {
                band += 1;
            }
            let top = chart.backend_coord(&(0.0, row_value(row) + 0.5));
            let bottom = chart.backend_coord(&(1.0, row_value(row) - 0.5));
            if band % 2 == 1 {
                area.draw(&Rectangle::new(
                    [(8, top.1), (WIDTH as i32 - 8, bottom.1)],
                    RGBColor(248, 250, 252).filled(),
                ))?;
            }
            let label = match &entry.family {
                None => Text::new(
                    subject_label(&entry.subject, entry.control),
                    (LABEL_WIDTH as i32 - 12, (top.1 + bottom.1) / 2),
                    text_with(12.0, FontStyle::Bold, INK, HPos::Right, VPos::Center),
                ),
                Some(family) => Text::new(
                    format!("family {family}"),
                    (LABEL_WIDTH as i32 - 12, (top.1 + bottom.1) / 2),
                    text(11.0, MUTED, HPos::Right, VPos::Center),
                ),
            };
            area.draw(&label)?;
        }
        super::quiet_mesh(&mut chart.configure_mesh())
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(6)
            .x_label_formatter(&|value| fixed(*value, 1))
            .x_desc("CSS (95% percentile interval)")
            .draw()?;
        Ok(rows
            .iter()
            .enumerate()
            .map(|(row, entry)| {
                let y = row_value(row);
                let (value, y_pixel) = chart.backend_coord(&(entry.value.clamp(0.0, 1.0), y));
                Place {
                    y: y_pixel,
                    value,
                    interval: entry.interval.map(|(low, high)| {
                        (
                            chart.backend_coord(&(low.clamp(0.0, 1.0), y)).0,
                            chart.backend_coord(&(high.clamp(0.0, 1.0), y)).0,
                        )
                    }),
                }
            })
            .collect::<Vec<_>>())
    })?;
    let value_x = (WIDTH - VALUE_WIDTH) as i32 + 14;
    for (entry, place) in rows.iter().zip(places) {
        let color = subject_color(entry.color, entry.control);
        let label = subject_label(&entry.subject, entry.control);
        let interval_text = entry
            .interval
            .map(|(low, high)| format!(" [{}, {}]", fixed(low, 2), fixed(high, 2)))
            .unwrap_or_default();
        let what = match &entry.family {
            None => "CSS overall".to_string(),
            Some(family) => format!("CSS, family {family}"),
        };
        let tooltip = format!("{label}: {what} = {}{interval_text}", fixed(entry.value, 3));
        let drawn = mark(&figure, &entry.subject, entry.control, tooltip, |area| {
            if let Some((low, high)) = place.interval {
                area.draw(&PathElement::new(
                    vec![(low, place.y), (high, place.y)],
                    color.stroke_width(2),
                ))?;
                for x in [low, high] {
                    area.draw(&PathElement::new(
                        vec![(x, place.y - 4), (x, place.y + 4)],
                        color.stroke_width(2),
                    ))?;
                }
            }
            let (radius, style) = match (&entry.family, entry.control) {
                (None, false) => (6, color.filled()),
                (None, true) => (6, WHITE.filled()),
                (Some(_), false) => (4, color.filled()),
                (Some(_), true) => (4, WHITE.filled()),
            };
            area.draw(&Circle::new((place.value, place.y), radius, style))?;
            if entry.control {
                area.draw(&Circle::new(
                    (place.value, place.y),
                    radius,
                    color.stroke_width(2),
                ))?;
            }
            let style = if entry.family.is_none() {
                text_with(12.0, FontStyle::Bold, INK, HPos::Left, VPos::Center)
            } else {
                text(11.0, MUTED, HPos::Left, VPos::Center)
            };
            area.draw(&Text::new(
                format!("{}{interval_text}", fixed(entry.value, 2)),
                (value_x, place.y),
                style,
            ))?;
            Ok(())
        })?;
        figure.marks.push(drawn);
    }
    Ok(figure)
}
