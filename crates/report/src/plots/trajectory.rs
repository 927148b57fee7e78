//! Entropy trajectories of the harness (EviDx's reasoning dynamics): per
//! subject, the median belief entropy H(t) in bits at each step t as a line,
//! with the interquartile band of the episodes behind it shaded.

use plotters::prelude::*;

use super::{Figure, fixed, mark, subject_color, subject_label};
use crate::error::Result;

/// One subject's trajectory.
#[derive(Debug, Clone)]
pub struct TrajectoryLine {
    pub subject: String,
    pub control: bool,
    /// The subject's colour on the page.
    pub color: (u8, u8, u8),
    /// (step, median, lower quartile, upper quartile, episodes), by step.
    pub points: Vec<(u32, f64, f64, f64, u64)>,
}

const WIDTH: u32 = 900;
const HEIGHT: u32 = 460;
const LEGEND: u32 = 220;

/// Draws the trajectories of `lines`.
pub fn entropy_trajectory(id: &str, title: &str, lines: &[TrajectoryLine]) -> Result<Figure> {
    let last = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|point| point.0))
        .max()
        .unwrap_or(1)
        .max(2);
    let top = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|point| point.3.max(point.1)))
        .fold(1.0_f64, f64::max)
        * 1.05;
    let mut figure = Figure {
        id: id.to_string(),
        kind: "trajectory",
        width: WIDTH,
        height: HEIGHT,
        title: title.to_string(),
        frame: String::new(),
        marks: Vec::new(),
    };
    // Pixel positions of each line's medians and of its band's outline.
    type Placed = (Vec<(i32, i32)>, Vec<(i32, i32)>);
    let placed: Vec<Placed>;
    (figure.frame, placed) = super::layer(id, (WIDTH, HEIGHT), |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(20)
            .margin_top(36)
            .margin_right(LEGEND)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d(1.0..f64::from(last), 0.0..top)?;
        super::quiet_mesh(&mut chart.configure_mesh())
            .x_labels(10)
            .x_label_formatter(&|value| fixed(*value, 0))
            .y_labels(6)
            .y_label_formatter(&|value| fixed(*value, 1))
            .x_desc("step t")
            .y_desc("belief entropy H(t), bits")
            .draw()?;
        super::draw_title(area, title)?;
        let legend_x = (WIDTH - LEGEND) as i32 + 16;
        for (index, line) in lines.iter().enumerate() {
            let color = subject_color(line.color, line.control);
            let label = subject_label(&line.subject, line.control);
            super::legend_line(area, legend_x, index, color, 2, &label)?;
        }
        Ok(lines
            .iter()
            .map(|line| {
                let at =
                    |step: u32, value: f64| chart.backend_coord(&(f64::from(step), value.clamp(0.0, top)));
                let median = line.points.iter().map(|p| at(p.0, p.1)).collect();
                let mut band: Vec<(i32, i32)> = line.points.iter().map(|p| at(p.0, p.3)).collect();
                band.extend(line.points.iter().rev().map(|p| at(p.0, p.2)));
                (median, band)
            })
            .collect())
    })?;
    for (line, (median, band)) in lines.iter().zip(placed) {
        let color = subject_color(line.color, line.control);
        let summary: Vec<String> = line
            .points
            .iter()
            .map(|&(step, value, low, high, episodes)| {
                format!(
                    "t{step}: {} [{}, {}] (n {episodes})",
                    fixed(value, 2),
                    fixed(low, 2),
                    fixed(high, 2)
                )
            })
            .collect();
        let tooltip = format!(
            "{}: median H(t) [interquartile band]: {}",
            subject_label(&line.subject, line.control),
            summary.join("; ")
        );
        let drawn = mark(&figure, &line.subject, line.control, tooltip, |area| {
            if band.len() >= 3 {
                area.draw(&Polygon::new(band, color.mix(0.18).filled()))?;
            }
            area.draw(&PathElement::new(median.clone(), color.stroke_width(2)))?;
            for point in median {
                area.draw(&Circle::new(point, 3, color.filled()))?;
            }
            Ok(())
        })?;
        figure.marks.push(drawn);
    }
    Ok(figure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mark_per_subject_with_its_band_and_median() {
        let lines = [
            TrajectoryLine {
                subject: "vllm/a".into(),
                control: false,
                color: (31, 119, 180),
                points: vec![
                    (1, 1.0, 0.8, 1.2, 4),
                    (2, 0.5, 0.2, 0.9, 4),
                    (3, 0.1, 0.0, 0.3, 3),
                ],
            },
            TrajectoryLine {
                subject: "control/reference".into(),
                control: true,
                color: (0, 0, 0),
                points: vec![(1, 0.0, 0.0, 0.0, 4)],
            },
        ];
        let figure = entropy_trajectory("t", "Entropy", &lines).unwrap();
        assert_eq!(figure.kind, "trajectory");
        assert_eq!(figure.marks.len(), 2);
        assert!(
            figure.marks[0].body.contains("<polygon"),
            "{}",
            figure.marks[0].body
        );
        assert!(figure.marks[0].tooltip.contains("t2: 0.50 [0.20, 0.90] (n 4)"));
        assert!(figure.frame.contains("step t"));
    }
}
