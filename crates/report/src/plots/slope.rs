//! Rank slope chart: each subject's rank under CMS (left) joined to its rank
//! under CSS (right); controls dashed and grey.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{Figure, GRID, INK, MUTED, fixed, mark, subject_color, subject_label, text, text_with};
use crate::error::Result;

/// One subject's line.
#[derive(Debug, Clone)]
pub struct SlopeLine {
    pub subject: String,
    pub control: bool,
    pub color: (u8, u8, u8),
    pub cms: f64,
    pub css: f64,
    pub rank_cms: f64,
    pub rank_css: f64,
}

const WIDTH: u32 = 900;
const LEFT: i32 = 340;
const RIGHT: i32 = 560;
const TOP: i32 = 70;
const STEP: i32 = 34;

fn rank_text(rank: f64) -> String {
    if rank.fract() == 0.0 {
        format!("{rank:.0}")
    } else {
        fixed(rank, 1)
    }
}

/// Draws the slope chart of `lines` (at least one).
pub fn slope(id: &str, title: &str, lines: &[SlopeLine]) -> Result<Figure> {
    let max_rank = lines
        .iter()
        .flat_map(|line| [line.rank_cms, line.rank_css])
        .fold(1.0_f64, f64::max);
    let y = |rank: f64| TOP + ((rank - 1.0) * f64::from(STEP)).round() as i32;
    let bottom = y(max_rank);
    let height = (bottom + 40) as u32;
    let mut figure = Figure {
        id: id.to_string(),
        kind: "slope",
        width: WIDTH,
        height,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    (figure.frame, ()) = super::layer(id, (WIDTH, height), |area| {
        for (x, heading, note) in [
            (LEFT, "CMS rank", "coverage of the consensus at baseline"),
            (RIGHT, "CSS rank", "updates that follow the intervention"),
        ] {
            area.draw(&Text::new(
                heading,
                (x, 20),
                text_with(14.0, FontStyle::Bold, INK, HPos::Center, VPos::Center),
            ))?;
            area.draw(&Text::new(
                note,
                (x, 40),
                text(11.0, MUTED, HPos::Center, VPos::Center),
            ))?;
            area.draw(&PathElement::new(
                vec![(x, TOP - 14), (x, bottom + 14)],
                GRID.stroke_width(2),
            ))?;
        }
        Ok(())
    })?;
    for line in lines {
        let color = subject_color(line.color, line.control);
        let label = subject_label(&line.subject, line.control);
        let from = (LEFT, y(line.rank_cms));
        let to = (RIGHT, y(line.rank_css));
        let tooltip = format!(
            "{label}: CMS {} (rank {}) → CSS {} (rank {})",
            fixed(line.cms, 3),
            rank_text(line.rank_cms),
            fixed(line.css, 3),
            rank_text(line.rank_css)
        );
        let drawn = mark(&figure, &line.subject, line.control, tooltip, |area| {
            if line.control {
                area.draw(&DashedPathElement::new(
                    vec![from, to],
                    6,
                    4,
                    color.stroke_width(2),
                ))?;
            } else {
                area.draw(&PathElement::new(vec![from, to], color.stroke_width(3)))?;
            }
            for at in [from, to] {
                if line.control {
                    area.draw(&Circle::new(at, 6, WHITE.filled()))?;
                    area.draw(&Circle::new(at, 6, color.stroke_width(2)))?;
                } else {
                    area.draw(&Circle::new(at, 6, color.filled()))?;
                }
            }
            area.draw(&Text::new(
                format!("{label}   {}   #{}", fixed(line.cms, 2), rank_text(line.rank_cms)),
                (LEFT - 14, from.1),
                text(12.0, INK, HPos::Right, VPos::Center),
            ))?;
            area.draw(&Text::new(
                format!("#{}   {}   {label}", rank_text(line.rank_css), fixed(line.css, 2)),
                (RIGHT + 14, to.1),
                text(12.0, INK, HPos::Left, VPos::Center),
            ))?;
            Ok(())
        })?;
        figure.marks.push(drawn);
    }
    Ok(figure)
}
