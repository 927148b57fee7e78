//! `cfeval power`: the number of cases a study needs to detect a CSS
//! difference at a given power and α (`cfeval_aggregate::power`), from a
//! pilot run (`--run`: two `--subject`s, paired B − A; or one with
//! `--threshold`) or from a stated `--difference` and `--sd`. Prints the
//! table (or `--json`) and writes the power curve as SVG (`--out`, by
//! default `RUN/power.svg`, or `power.svg` here without a run).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use cfeval_aggregate::power::{self, Design, PilotRun, Plan, Row, Settings, Stated};
use clap::Args;
use serde::Serialize;

#[derive(Debug, Args)]
pub struct PowerArgs {
    /// The pilot run (without it: the stated mode, `--difference` and `--sd`).
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// The judge whose CSS verdicts the pilot is read with [default: rule].
    #[arg(long)]
    pub judge: Option<String>,
    /// The mode of the pilot's answers [default: single_shot].
    #[arg(long)]
    pub mode: Option<String>,
    /// A subject of the pilot: twice for the paired design (difference B − A,
    /// A first), once with `--threshold`.
    #[arg(long = "subject")]
    pub subjects: Vec<String>,
    /// One subject's CSS is tested against this threshold (difference CSS − T).
    #[arg(long, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// The CSS difference to detect [default: the pilot's, per scope].
    #[arg(long, allow_negative_numbers = true)]
    pub difference: Option<f64>,
    /// Stated mode: the standard deviation of the per-case difference (one
    /// tuple mean per case).
    #[arg(long, allow_negative_numbers = true)]
    pub sd: Option<f64>,
    /// The power to reach.
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    pub power: f64,
    /// The two-sided level of the test.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Simulated studies per number of cases.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub simulations: u64,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The largest number of cases searched.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    pub max_cases: u64,
    /// The number of cases the study is planned with: the table adds each
    /// scope's power there.
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..))]
    pub cases: Option<u64>,
    /// Where to write the power curve (SVG).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the plan as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    plan: &'a Plan,
    svg: PathBuf,
}

pub fn power(args: &PowerArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let plan = plan(args)?;
    let svg = args.out.clone().unwrap_or_else(|| match &args.run {
        Some(run) => run.join("power.svg"),
        None => PathBuf::from("power.svg"),
    });
    let figure =
        cfeval_report::plots::power_curve("power", &title(&plan), plan.settings.power, &lines(&plan))
            .context("failed to draw the power curve")?;
    cfeval_schema::write_atomic(&svg, cfeval_report::plots::svg_document(&figure).as_bytes()).with_context(
        || {
            format!(
                "failed to write the power curve to {} (choose another file with --out)",
                svg.display()
            )
        },
    )?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &Summary { plan: &plan, svg })?;
        writeln!(out)?;
    } else {
        out.write_all(table(&plan, &svg).as_bytes())?;
    }
    Ok(())
}

/// The arguments a pipeline's `[power]` section stands for, with the
/// pipeline's seed and the number of cases it runs.
pub fn pipeline_args(section: &crate::pipeline::PowerPlan, seed: u64, cases: u64) -> PowerArgs {
    PowerArgs {
        run: section.pilot.clone(),
        judge: section.judge.clone(),
        mode: section.mode.clone(),
        subjects: section.subjects.clone(),
        threshold: section.threshold,
        difference: section.difference,
        sd: section.sd,
        power: section.power,
        alpha: section.alpha,
        simulations: section.simulations,
        seed,
        max_cases: 100_000,
        cases: Some(cases.max(2)),
        out: None,
        json: false,
    }
}

/// The plan `args` ask for.
pub fn plan(args: &PowerArgs) -> anyhow::Result<Plan> {
    let settings = Settings {
        power: args.power,
        alpha: args.alpha,
        simulations: args.simulations,
        seed: args.seed,
        max_cases: args.max_cases,
        difference: args.difference,
        planned_cases: args.cases,
    };
    let plan = match &args.run {
        Some(run) => {
            if args.sd.is_some() {
                bail!("--sd is for the stated mode (no --run); with --run the pilot's cases give the spread");
            }
            let design = match (args.subjects.as_slice(), args.threshold) {
                ([a, b], None) => Design::Paired {
                    a: a.clone(),
                    b: b.clone(),
                },
                ([subject], Some(threshold)) => Design::Threshold {
                    subject: subject.clone(),
                    threshold,
                },
                ([subject], None) => bail!(
                    "one subject (`{subject}`) needs --threshold T to be tested against; give two --subject for the paired design"
                ),
                ([_, _], Some(_)) => {
                    bail!("--threshold is for one subject; two subjects are compared with each other (B − A)")
                }
                ([], _) => bail!(
                    "--run needs --subject: two for the paired design (B − A, in the order given), or one with --threshold"
                ),
                (subjects, _) => bail!(
                    "--subject is given {} times; the paired design compares two",
                    subjects.len()
                ),
            };
            let pilot = PilotRun {
                run: run.clone(),
                judge: args.judge.clone().unwrap_or_else(|| "rule".into()),
                mode: args.mode.clone().unwrap_or_else(|| "single_shot".into()),
                design,
            };
            power::plan_pilot(&pilot, &settings)
                .with_context(|| format!("failed to plan from the pilot run {}", run.display()))?
        }
        None => {
            let unused: Vec<&str> = [
                (!args.subjects.is_empty(), "--subject"),
                (args.threshold.is_some(), "--threshold"),
                (args.judge.is_some(), "--judge"),
                (args.mode.is_some(), "--mode"),
            ]
            .into_iter()
            .filter_map(|(given, name)| given.then_some(name))
            .collect();
            if !unused.is_empty() {
                bail!(
                    "{} read a pilot run: give --run, or leave them out for the stated mode",
                    unused.join(", ")
                );
            }
            let (Some(difference), Some(sd)) = (args.difference, args.sd) else {
                bail!(
                    "without --run, give --difference D and --sd S (the standard deviation of the per-case difference); or a pilot with --run"
                );
            };
            power::plan_stated(&Stated { difference, sd }, &settings)
                .context("failed to plan from the stated difference")?
        }
    };
    Ok(plan)
}

pub(crate) fn scope_name(row: &Row) -> String {
    if row.level == "family" {
        format!("family {}", row.group)
    } else {
        "overall".into()
    }
}

/// What is compared, in words.
pub(crate) fn compared(plan: &Plan) -> String {
    match (plan.design, plan.subjects.as_slice(), plan.threshold) {
        ("paired", [a, b], _) => format!("{b} − {a}"),
        ("threshold", [subject], Some(threshold)) => format!("CSS of {subject} − {threshold}"),
        _ => "the stated difference".into(),
    }
}

fn title(plan: &Plan) -> String {
    let run = plan
        .run
        .as_deref()
        .map(|run| format!(", pilot run {run}"))
        .unwrap_or_default();
    format!("Power to detect {}{run}", compared(plan))
}

fn lines(plan: &Plan) -> Vec<cfeval_report::plots::PowerLine> {
    plan.rows
        .iter()
        .filter(|row| !row.curve.is_empty())
        .map(|row| cfeval_report::plots::PowerLine {
            label: scope_name(row),
            overall: row.level == "overall",
            points: row
                .curve
                .iter()
                .map(|point| {
                    (
                        point.cases,
                        point.power,
                        point.type_i_error > plan.max_type_i_error,
                    )
                })
                .collect(),
            reached: row.cases.zip(row.power),
        })
        .collect()
}

/// A row's cases needed: `> N` when not reached within `--max-cases`.
pub(crate) fn cases_needed(row: &Row) -> String {
    match (row.cases, row.evaluated_cases) {
        (Some(cases), _) => cases.to_string(),
        (None, Some(evaluated)) => format!("> {evaluated}"),
        (None, None) => "–".into(),
    }
}

/// A row's power with the planned cases, flagged where the test
/// over-rejects there (type I error above the plan's bound).
pub(crate) fn planned_power(plan: &Plan, row: &Row) -> String {
    match (row.planned_power, row.planned_se, row.planned_type_i_error) {
        (Some(power), Some(se), Some(size)) if size > plan.max_type_i_error => {
            format!("{power:.3} ± {se:.3} (type I {size:.3}: over-rejects)")
        }
        (Some(power), Some(se), _) => format!("{power:.3} ± {se:.3}"),
        _ => "–".into(),
    }
}

fn number(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |value| format!("{value:.digits$}"))
}

fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), |value| format!("{value:+.3}"))
}

fn p_value(value: Option<f64>) -> String {
    match value {
        None => "–".into(),
        Some(value) if value < 0.001 => "<0.001".into(),
        Some(value) => format!("{value:.3}"),
    }
}

fn count(value: Option<u64>) -> String {
    value.map_or_else(|| "–".into(), |value| value.to_string())
}

/// The printed plan: a header, the aligned table, notes and a legend.
fn table(plan: &Plan, svg: &std::path::Path) -> String {
    let settings = &plan.settings;
    let mut text = String::new();
    let source = match (&plan.run, plan.pilot_cases) {
        (Some(run), Some(cases)) => format!(
            ", judge {}, mode {}, pilot run {run} ({cases} cases, {} judged tuples in the CSS families)",
            plan.judge.as_deref().unwrap_or_default(),
            plan.mode.as_deref().unwrap_or_default(),
            plan.pilot_judged.unwrap_or_default()
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        text,
        "cfeval power: {} design, {}{source}",
        plan.design,
        compared(plan)
    );
    let _ = writeln!(
        text,
        "target power {:.2}, two-sided α {}, {} simulated studies per n, seed {}; difference: {}",
        settings.power,
        settings.alpha,
        settings.simulations,
        settings.seed,
        if plan.difference_from == "pilot" {
            "the pilot's, per scope"
        } else {
            "as stated"
        }
    );
    let _ = writeln!(text, "test: {}\n", plan.test);
    let pilot = plan.rows.iter().any(|row| row.pilot.is_some());
    let (reference, value) = match plan.design {
        "paired" => ("A", "B"),
        _ => ("T", "CSS"),
    };
    let mut header: Vec<String> = vec!["scope".into()];
    if pilot {
        header.extend(["pilot cases", "tuples", reference, value, "difference", "se", "p"].map(String::from));
    }
    header.extend(["sd", "detect", "cases", "power", "verified", "type I", "normal"].map(String::from));
    if pilot {
        header.push("pilot range".into());
    }
    if let Some(planned) = settings.planned_cases {
        header.push(format!("power at {planned}"));
    }
    let mut cells = vec![header];
    for row in &plan.rows {
        let mut line = vec![scope_name(row)];
        if let Some(summary) = &row.pilot {
            line.extend([
                summary.cases.to_string(),
                summary.tuples.to_string(),
                format!("{:.3}", summary.reference),
                format!("{:.3}", summary.value),
                signed(Some(summary.difference)),
                number(summary.se, 3),
                p_value(summary.p_value),
            ]);
        } else if pilot {
            line.extend(std::iter::repeat_n("–".to_string(), 7));
        }
        let cases = cases_needed(row);
        let verified = match (row.verified_power, row.verified_se) {
            (Some(power), Some(se)) => format!("{power:.3} ± {se:.3}"),
            _ => "–".into(),
        };
        line.extend([
            number(Some(row.sd).filter(|sd| sd.is_finite()), 3),
            signed(row.difference),
            cases,
            number(row.power, 3),
            verified,
            number(row.type_i_error, 3),
            count(row.normal_cases),
        ]);
        if pilot {
            line.push(match row.normal_cases_range {
                Some([low, high]) => format!(
                    "{}–{}",
                    count(low),
                    high.map_or("∞".into(), |high| high.to_string())
                ),
                None => "–".into(),
            });
        }
        if settings.planned_cases.is_some() {
            line.push(planned_power(plan, row));
        }
        cells.push(line);
    }
    let columns = cells[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            cells
                .iter()
                .map(|line| line[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in &cells {
        let mut rendered = String::new();
        for (column, cell) in line.iter().enumerate() {
            let pad = widths[column] - cell.chars().count();
            if column == 0 {
                rendered.push_str(cell);
                rendered.push_str(&" ".repeat(pad));
            } else {
                rendered.push_str("  ");
                rendered.push_str(&" ".repeat(pad));
                rendered.push_str(cell);
            }
        }
        let _ = writeln!(text, "{}", rendered.trim_end());
    }
    for row in plan.rows.iter().filter(|row| row.note.is_some()) {
        let _ = writeln!(
            text,
            "note, {}: {}",
            scope_name(row),
            row.note.as_deref().unwrap_or_default()
        );
    }
    let _ = writeln!(
        text,
        "\ncases: the fewest cases with simulated power ≥ {:.2} (> N: not reached within --max-cases); \
         power: the search's estimate there; verified: on fresh studies ± Monte Carlo SE; \
         type I: rejection rate at difference 0 (should be near α); \
         normal: ((z₁₋α/₂ + z_power) · sd / detect)²{}{}",
        settings.power,
        if pilot {
            "; pilot range: normal over 1,000 resamples of the pilot's cases (2.5%–97.5%)"
        } else {
            ""
        },
        settings.planned_cases.map_or_else(String::new, |planned| format!(
            "; power at {planned}: the simulated power with the planned {planned} cases (--cases), on fresh studies ± Monte Carlo SE, flagged where the test's type I error there exceeds {:.3}",
            plan.max_type_i_error
        ))
    );
    let _ = writeln!(text, "power curve: {}", svg.display());
    text
}
