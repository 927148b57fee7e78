//! Family × subject heatmap of CSS, with the spurious-shift rate on the
//! negative-control family in a column of its own (never pooled into CSS);
//! the same drawing serves the rubric's domain × subject map (scale 1–5,
//! a domain that was not applicable shown as N/A).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{BAD, Figure, GRID, INK, MUTED, blend, fixed, mark, subject_label, text, text_with};
use crate::error::Result;

/// One subject's row of cells.
#[derive(Debug, Clone)]
pub struct HeatmapRow {
    pub subject: String,
    pub control: bool,
    /// CSS per family, in [`Heatmap::families`] order.
    pub css: Vec<Option<f64>>,
    /// Spurious-shift rate on the control family.
    pub spurious: Option<f64>,
    /// Columns whose missing value means "not applicable" (drawn `N/A`,
    /// not `–`); empty: none.
    pub not_applicable: Vec<bool>,
}

/// The cells of the heatmap.
#[derive(Debug, Clone)]
pub struct Heatmap {
    pub families: Vec<String>,
    /// Whether each family is a blind spot.
    pub blind: Vec<bool>,
    /// The negative-control family, when the run has spurious-shift rates.
    pub control_family: Option<String>,
    pub rows: Vec<HeatmapRow>,
    /// What the cells measure (the heading over the columns and the
    /// legend's name) and the range the colour spans.
    pub scale: Scale,
}

/// The quantity a heatmap shows and the range its colour spans.
#[derive(Debug, Clone)]
pub struct Scale {
    pub heading: String,
    pub name: String,
    pub low: f64,
    pub high: f64,
}

impl Scale {
    /// CSS by family, 0–1.
    pub fn css() -> Self {
        Self {
            heading: "CSS by family".into(),
            name: "CSS".into(),
            low: 0.0,
            high: 1.0,
        }
    }

    /// Where `value` falls in the range (0–1).
    fn position(&self, value: f64) -> f64 {
        if self.high > self.low {
            ((value - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

const LABEL_WIDTH: i32 = 280;
const CELL_WIDTH: i32 = 64;
const CELL_HEIGHT: i32 = 30;
const HEADER: i32 = 62;
const GAP: i32 = 24;
const LEGEND: i32 = 56;

const CSS_LOW: RGBColor = RGBColor(239, 246, 255);
const CSS_HIGH: RGBColor = RGBColor(30, 64, 175);
const SHIFT_LOW: RGBColor = RGBColor(254, 242, 242);
const SHIFT_HIGH: RGBColor = RGBColor(153, 27, 27);

/// A cell's fill and the colour of the text on it.
fn shade(low: RGBColor, high: RGBColor, value: f64) -> (RGBColor, RGBColor) {
    let fill = blend(low, high, value);
    let ink = if value > 0.55 { WHITE } else { INK };
    (fill, ink)
}

/// Draws the heatmap (at least one row and one column).
pub fn heatmap(id: &str, title: &str, map: &Heatmap) -> Result<Figure> {
    let families = map.families.len() as i32;
    let control_x = LABEL_WIDTH + families * CELL_WIDTH + GAP;
    let width = (control_x
        + if map.control_family.is_some() {
            CELL_WIDTH
        } else {
            0
        }
        + 24) as u32;
    let width = width.max(560);
    let rows_bottom = HEADER + map.rows.len() as i32 * CELL_HEIGHT;
    let height = (rows_bottom + LEGEND) as u32;
    let column_x = |column: usize| LABEL_WIDTH + column as i32 * CELL_WIDTH;
    let row_y = |row: usize| HEADER + row as i32 * CELL_HEIGHT;
    let mut figure = Figure {
        id: id.to_string(),
        kind: "heatmap",
        width,
        height,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    (figure.frame, ()) = super::layer(id, (width, height), |area| {
        let heading = text_with(12.0, FontStyle::Bold, INK, HPos::Center, VPos::Center);
        if families > 0 {
            area.draw(&Text::new(
                map.scale.heading.as_str(),
                (LABEL_WIDTH + families * CELL_WIDTH / 2, 14),
                heading.clone(),
            ))?;
        }
        for (column, family) in map.families.iter().enumerate() {
            let center = column_x(column) + CELL_WIDTH / 2;
            area.draw(&Text::new(family.as_str(), (center, 34), heading.clone()))?;
            if map.blind.get(column).copied().unwrap_or(false) {
                area.draw(&Text::new(
                    "blind spot",
                    (center, 50),
                    text(10.0, BAD, HPos::Center, VPos::Center),
                ))?;
            }
        }
        if let Some(family) = &map.control_family {
            let center = control_x + CELL_WIDTH / 2;
            area.draw(&Text::new("Spurious shift", (center, 14), heading.clone()))?;
            area.draw(&Text::new(family.as_str(), (center, 34), heading.clone()))?;
        }
        for (row, entry) in map.rows.iter().enumerate() {
            let center = row_y(row) + CELL_HEIGHT / 2;
            let color = if entry.control { MUTED } else { INK };
            area.draw(&Text::new(
                subject_label(&entry.subject, entry.control),
                (LABEL_WIDTH - 10, center),
                text(12.0, color, HPos::Right, VPos::Center),
            ))?;
            let missing = entry
                .css
                .iter()
                .enumerate()
                .filter(|(_, value)| value.is_none())
                .map(|(column, _)| {
                    let na = entry.not_applicable.get(column).copied().unwrap_or(false);
                    (column_x(column), if na { "N/A" } else { "–" })
                })
                .chain(
                    (map.control_family.is_some() && entry.spurious.is_none()).then_some((control_x, "–")),
                );
            for (x, shown) in missing {
                let y = row_y(row);
                area.draw(&Rectangle::new(
                    [(x + 1, y + 1), (x + CELL_WIDTH - 1, y + CELL_HEIGHT - 1)],
                    GRID.filled(),
                ))?;
                area.draw(&Text::new(
                    shown,
                    (x + CELL_WIDTH / 2, center),
                    text(12.0, MUTED, HPos::Center, VPos::Center),
                ))?;
            }
        }
        // Legend: five swatches per scale.
        let legend_y = rows_bottom + 22;
        let mut x = LABEL_WIDTH;
        let main = (
            map.scale.name.as_str(),
            map.scale.low,
            map.scale.high,
            CSS_LOW,
            CSS_HIGH,
        );
        let scales: Vec<(&str, f64, f64, RGBColor, RGBColor)> = if map.control_family.is_some() {
            vec![main, ("spurious shift", 0.0, 1.0, SHIFT_LOW, SHIFT_HIGH)]
        } else {
            vec![main]
        };
        for (name, from, to, low, high) in scales {
            let (from, to) = (fixed(from, 0), fixed(to, 0));
            area.draw(&Text::new(
                format!("{name} {from}"),
                (x, legend_y + 6),
                text(11.0, MUTED, HPos::Left, VPos::Center),
            ))?;
            x += 8 * (name.len() as i32 + from.len() as i32 + 1);
            for step in 0..5 {
                let fill = blend(low, high, f64::from(step) / 4.0);
                area.draw(&Rectangle::new(
                    [(x, legend_y), (x + 18, legend_y + 12)],
                    fill.filled(),
                ))?;
                x += 18;
            }
            area.draw(&Text::new(
                to,
                (x + 4, legend_y + 6),
                text(11.0, MUTED, HPos::Left, VPos::Center),
            ))?;
            x += 40;
        }
        Ok(())
    })?;
    for (row, entry) in map.rows.iter().enumerate() {
        let y = row_y(row);
        let label = subject_label(&entry.subject, entry.control);
        let cells = entry
            .css
            .iter()
            .enumerate()
            .filter_map(|(column, value)| {
                let family = map.families.get(column)?;
                let value = (*value)?;
                Some((
                    column_x(column),
                    value,
                    map.scale.position(value),
                    format!("{}, {family}", map.scale.name),
                    CSS_LOW,
                    CSS_HIGH,
                ))
            })
            .chain(map.control_family.as_ref().and_then(|family| {
                Some((
                    control_x,
                    entry.spurious?,
                    entry.spurious?,
                    format!("spurious-shift rate, family {family}"),
                    SHIFT_LOW,
                    SHIFT_HIGH,
                ))
            }));
        for (x, value, position, what, low, high) in cells {
            let (fill, ink) = shade(low, high, position);
            let tooltip = format!("{label}: {what} = {}", fixed(value, 3));
            let drawn = mark(&figure, &entry.subject, entry.control, tooltip, |area| {
                area.draw(&Rectangle::new(
                    [(x + 1, y + 1), (x + CELL_WIDTH - 1, y + CELL_HEIGHT - 1)],
                    fill.filled(),
                ))?;
                area.draw(&Text::new(
                    fixed(value, 2),
                    (x + CELL_WIDTH / 2, y + CELL_HEIGHT / 2),
                    text(12.0, ink, HPos::Center, VPos::Center),
                ))?;
                Ok(())
            })?;
            figure.marks.push(drawn);
        }
    }
    Ok(figure)
}
