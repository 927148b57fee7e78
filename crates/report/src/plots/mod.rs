//! The plots, drawn with plotters' SVG backend.
//!
//! A [`Figure`] is drawn in layers: the frame (axes, grid, labels) in one
//! pass, then every mark (a point, a cell, a line) in a pass of its own, so
//! that the page template can wrap each mark in `<g class="mark">` with a
//! tooltip. The coordinates of the marks come from the frame's chart, so
//! frame and marks line up exactly; `figure.svg.j2` puts the layers together.

mod forest;
mod heatmap;
mod power;
mod scatter;
mod slope;
mod trajectory;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;

pub use forest::{ForestRow, forest};
pub use heatmap::{Heatmap, HeatmapRow, Scale, heatmap};
pub use power::{PowerLine, power_curve, svg_document};
pub use scatter::{ScatterPoint, scatter};
pub use slope::{SlopeLine, slope};
pub use trajectory::{TrajectoryLine, entropy_trajectory};

use crate::error::{Error, Result};

/// One drawn plot: the frame and its marks, as SVG fragments.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The `id` of the `<svg>` element.
    pub id: String,
    /// `slope`, `heatmap`, `forest`, `scatter`, `power` or `trajectory` (the
    /// `plot-…` class).
    pub kind: &'static str,
    pub width: u32,
    pub height: u32,
    /// Accessible title of the plot.
    pub title: String,
    /// Axes, grid and labels.
    pub frame: String,
    pub marks: Vec<Mark>,
}

/// One mark of a plot (one subject's line, one cell, one interval).
#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    pub subject: String,
    pub control: bool,
    /// Shown on hover.
    pub tooltip: String,
    /// The mark's SVG elements.
    pub body: String,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult<T> = std::result::Result<T, DrawingAreaErrorKind<std::io::Error>>;

/// Draws one layer of `size` and returns its SVG elements (without the
/// `<svg>` element plotters wraps them in) and what `draw` returned.
fn layer<T>(
    plot: &str,
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> DrawResult<T>,
) -> Result<(String, T)> {
    let failed = |detail: String| Error::Plot {
        plot: plot.to_string(),
        detail,
    };
    let mut buffer = String::new();
    let value = {
        let root = SVGBackend::with_string(&mut buffer, size).into_drawing_area();
        let value = draw(&root).map_err(|error| failed(error.to_string()))?;
        root.present().map_err(|error| failed(error.to_string()))?;
        value
    };
    let inner = buffer
        .split_once('\n')
        .and_then(|(_, rest)| rest.strip_suffix("</svg>\n"))
        .ok_or_else(|| failed("the SVG backend wrote an unexpected document".into()))?;
    Ok((inner.to_string(), value))
}

/// Draws one mark of a figure.
fn mark(
    figure: &Figure,
    subject: &str,
    control: bool,
    tooltip: String,
    draw: impl FnOnce(&Area<'_>) -> DrawResult<()>,
) -> Result<Mark> {
    let (body, ()) = layer(&figure.id, (figure.width, figure.height), draw)?;
    Ok(Mark {
        subject: subject.to_string(),
        control,
        tooltip,
        body,
    })
}

/// Colours of the page: subjects take [`PALETTE`] in turn; controls are grey.
pub const PALETTE: [(u8, u8, u8); 8] = [
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (148, 103, 189),
    (255, 127, 14),
    (23, 190, 207),
    (140, 86, 75),
    (227, 119, 194),
];
const CONTROL: RGBColor = RGBColor(107, 114, 128);
const INK: RGBColor = RGBColor(31, 41, 55);
const MUTED: RGBColor = RGBColor(107, 114, 128);
const GRID: RGBColor = RGBColor(229, 231, 235);
const GOOD: RGBColor = RGBColor(21, 128, 61);
const BAD: RGBColor = RGBColor(185, 28, 28);

/// The colour of a subject's marks.
fn subject_color(color: (u8, u8, u8), control: bool) -> RGBColor {
    if control {
        CONTROL
    } else {
        RGBColor(color.0, color.1, color.2)
    }
}

/// A text style of `px` pixels (plotters writes `font-size` as size / 1.24).
fn text(px: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    text_with(px, FontStyle::Normal, color, h, v)
}

fn text_with(px: f64, style: FontStyle, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: FontDesc::new(FontFamily::SansSerif, px * 1.24, style),
        color: color.to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// The look every chart's axes share: major grid lines only, muted axes.
fn quiet_mesh<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.max_light_lines(0)
        .bold_line_style(GRID)
        .axis_style(MUTED)
        .label_style(text(11.0, INK, HPos::Center, VPos::Top))
        .axis_desc_style(text(12.0, INK, HPos::Center, VPos::Top))
}

/// A plot's title, bold at its top left.
fn draw_title(area: &Area<'_>, title: &str) -> DrawResult<()> {
    area.draw(&Text::new(
        title.to_string(),
        (20, 18),
        text_with(14.0, FontStyle::Bold, INK, HPos::Left, VPos::Center),
    ))
}

/// Entry `index` of a legend at `x`: a line of `color` and `width`, then
/// its label.
fn legend_line(
    area: &Area<'_>,
    x: i32,
    index: usize,
    color: RGBColor,
    width: u32,
    label: &str,
) -> DrawResult<()> {
    let y = 56 + 22 * index as i32;
    area.draw(&PathElement::new(
        vec![(x, y), (x + 24, y)],
        color.stroke_width(width),
    ))?;
    area.draw(&Text::new(
        label.to_string(),
        (x + 32, y),
        text(11.0, INK, HPos::Left, VPos::Center),
    ))
}

/// A subject's name as plots show it.
fn subject_label(subject: &str, control: bool) -> String {
    if control {
        format!("{subject} (control)")
    } else {
        subject.to_string()
    }
}

/// Rounds for display.
pub fn fixed(value: f64, digits: usize) -> String {
    format!("{value:.digits$}")
}

/// Linear interpolation between two colours.
fn blend(from: RGBColor, to: RGBColor, t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}
