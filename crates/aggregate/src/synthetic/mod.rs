//! Seeded synthetic judgments with known structure, for tests, benchmarks
//! and demos: subjects with known per-family update probabilities, two modes,
//! judges that agree up to a set rate, CMS rows per baseline, a
//! negative-control family, and optionally abstaining judges and truncated
//! answers. Row `i` depends only on the seed and its indices.
//!
//! [`clustered`] makes per-case sums with a known truth and within-case
//! correlation, for the coverage simulation of the bootstrap.

pub mod clustered;

use cfeval_schema::JudgmentRow;

use crate::accumulate::UNCERTAIN;
use crate::stats::Rng;

/// The shape of a synthetic run.
#[derive(Debug, Clone)]
pub struct Shape {
    pub run: String,
    /// `(subject, is_control, per-family probability of a correct update)`;
    /// the probabilities are for families A–E in order.
    pub subjects: Vec<(String, bool, [f64; 5])>,
    pub modes: Vec<String>,
    pub judges: Vec<String>,
    pub cases: usize,
    /// `(intervention, family)`, families A–E and N.
    pub interventions: Vec<(String, String)>,
    /// Repeated judgments of every tuple (e.g. sampled responses).
    pub replicates: usize,
    /// Probability that the second and later judges agree with the first.
    pub judge_agreement: f64,
    /// Probability that a judge abstains on a CSS pair (label `uncertain`,
    /// no score). 0 draws nothing, leaving the other rows as they were.
    pub abstain: f64,
    /// Probability that a variant's answer is truncated (every judge's row
    /// then has `status = truncated` and no score). 0 draws nothing.
    pub truncated: f64,
    pub seed: u64,
}

impl Shape {
    /// 6 subjects (two of them controls) × 2 modes × 1 judge × `cases` cases
    /// × 12 interventions (10 in A–E, 2 in N) × `replicates`.
    pub fn standard(cases: usize, replicates: usize, judges: usize) -> Self {
        let subject = |name: &str, control: bool, p: [f64; 5]| (name.to_string(), control, p);
        Self {
            run: "synthetic".into(),
            subjects: vec![
                subject("openai/gpt-5", false, [0.55, 0.45, 0.40, 0.02, 0.50]),
                subject("anthropic/claude-opus-4-7", false, [0.60, 0.50, 0.35, 0.03, 0.45]),
                subject("xai/grok-4", false, [0.70, 0.60, 0.50, 0.04, 0.60]),
                subject("embedded/smollm2-135m", false, [0.20, 0.15, 0.10, 0.01, 0.15]),
                subject("control/reference", true, [0.98, 0.98, 0.98, 0.98, 0.98]),
                subject("control/constant", true, [0.0, 0.0, 0.0, 0.0, 0.0]),
            ],
            modes: vec!["single_shot".into(), "agent".into()],
            judges: (0..judges)
                .map(|index| ["rule", "openai/gpt-5.4", "anthropic/claude-opus-4-7"][index % 3].to_string())
                .collect(),
            cases,
            interventions: [
                ("A1", "A"),
                ("A2", "A"),
                ("A3", "A"),
                ("B1", "B"),
                ("C1", "C"),
                ("C2", "C"),
                ("D1", "D"),
                ("D2", "D"),
                ("E1", "E"),
                ("E2", "E"),
                ("N1", "N"),
                ("N2", "N"),
            ]
            .iter()
            .map(|(intervention, family)| (intervention.to_string(), family.to_string()))
            .collect(),
            replicates,
            judge_agreement: 0.85,
            abstain: 0.0,
            truncated: 0.0,
            seed: 7,
        }
    }

    /// Number of rows [`Shape::rows`] yields.
    pub fn len(&self) -> usize {
        self.subjects.len()
            * self.modes.len()
            * self.judges.len()
            * self.cases
            * self.replicates
            * (self.interventions.len() + 1)
    }

    /// Whether the shape has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows, in (subject, mode, case, replicate, intervention, judge) order.
    pub fn rows(&self) -> impl Iterator<Item = JudgmentRow> + '_ {
        let per_subject = self.modes.len() * self.cases * self.replicates;
        (0..self.subjects.len() * per_subject).flat_map(move |index| {
            let subject = index / per_subject;
            let mode = (index / (self.cases * self.replicates)) % self.modes.len();
            let case = (index / self.replicates) % self.cases;
            let replicate = index % self.replicates;
            self.tuple_rows(subject, mode, case, replicate)
        })
    }

    fn tuple_rows(&self, subject: usize, mode: usize, case: usize, replicate: usize) -> Vec<JudgmentRow> {
        let (name, control, probabilities) = &self.subjects[subject];
        let mode_name = &self.modes[mode];
        let agent = mode_name == "agent";
        let case_id = format!("case-{case:05}");
        let stream =
            (((subject * self.modes.len() + mode) * self.cases + case) * self.replicates + replicate) as u64;
        let mut rng = Rng::new(self.seed, stream);
        let mut rows = Vec::with_capacity((self.interventions.len() + 1) * self.judges.len());
        let row = |judge: &str, intervention: &str, family: &str, metric: &str, score: f64, label: &str| {
            JudgmentRow {
                run: self.run.clone(),
                judge: judge.to_string(),
                subject: name.clone(),
                is_control: *control,
                mode: mode_name.clone(),
                case_id: case_id.clone(),
                variant_id: format!("{case_id}-{intervention}-r{replicate}"),
                sample: 0,
                intervention: intervention.to_string(),
                family: family.to_string(),
                catalog_hash: "catalog-synthetic".into(),
                metric: metric.to_string(),
                score: Some(score),
                label: Some(label.to_string()),
                rationale: None,
                status: "ok".into(),
                error: None,
                prompt_hash: format!("prompt-{judge}"),
                prompt_set: Some("neutral".into()),
                changed: None,
                decisive_section_read: None,
                decided_by: Some(judge.to_string()),
                baseline_plan_source: None,
                plan_source: None,
            }
        };
        // CMS of the baseline: around a subject-specific level.
        let cms_level = 0.35 + 0.08 * subject as f64;
        let cms = (cms_level + 0.15 * (rng.unit() - 0.5)).clamp(0.0, 1.0);
        for judge in &self.judges {
            let baseline = cfeval_schema::vocab::BASELINE;
            rows.push(row(judge, baseline, baseline, "cms", cms, "coverage"));
        }
        for (intervention, family) in &self.interventions {
            let family_index = "ABCDE".find(family.as_str());
            let u = rng.unit();
            let (score, label, changed) = match family_index {
                Some(f) => {
                    let p = probabilities[f] + if agent { 0.05 } else { 0.0 };
                    if u < p {
                        (1.0, "updated_correct", true)
                    } else if u < p + (1.0 - p) / 8.0 {
                        (0.5, "acknowledged_unchanged", false)
                    } else {
                        (0.0, "ignored", false)
                    }
                }
                // Negative control: erratic subjects shift spuriously.
                None => {
                    let p_shift = if *control {
                        0.0
                    } else {
                        0.05 + 0.03 * subject as f64
                    };
                    if u < p_shift {
                        (0.0, "shifted_spuriously", true)
                    } else {
                        (1.0, "held_correctly", false)
                    }
                }
            };
            let read = agent.then(|| rng.unit() < 0.8);
            let truncated = self.truncated > 0.0 && rng.unit() < self.truncated;
            for (judge_index, judge) in self.judges.iter().enumerate() {
                let (score, label) =
                    if judge_index == 0 || rng.unit() < self.judge_agreement || family_index.is_none() {
                        (score, label)
                    } else {
                        let other = f64::from(rng.below(3)) / 2.0;
                        let label =
                            ["ignored", "acknowledged_unchanged", "updated_correct"][(other * 2.0) as usize];
                        (other, label)
                    };
                let mut judgment = row(judge, intervention, family, "css", score, label);
                judgment.changed = Some(changed);
                judgment.decisive_section_read = read;
                if truncated {
                    judgment.status = "truncated".into();
                    judgment.score = None;
                    judgment.label = None;
                } else if self.abstain > 0.0 && family_index.is_some() && rng.unit() < self.abstain {
                    judgment.score = None;
                    judgment.label = Some(UNCERTAIN.into());
                }
                rows.push(judgment);
            }
        }
        rows
    }
}

/// Writes the shape's rows as the `judgments` table of `run_dir`, in batches.
pub fn write_judgments(shape: &Shape, run_dir: &std::path::Path) -> crate::Result<u64> {
    let mut store = cfeval_schema::ShardStore::open_table::<JudgmentRow>(run_dir)?;
    let mut writer = store.writer(cfeval_schema::Provenance {
        run: shape.run.clone(),
        unit: "synthetic".into(),
        fingerprint: "synthetic".into(),
        catalog_hash: Some("catalog-synthetic".into()),
    });
    let mut batch = Vec::with_capacity(65_536);
    let mut written = 0u64;
    for row in shape.rows() {
        batch.push(row);
        if batch.len() == batch.capacity() {
            writer.write_rows(&batch)?;
            written += batch.len() as u64;
            batch.clear();
        }
    }
    writer.write_rows(&batch)?;
    written += batch.len() as u64;
    let shards = writer.finish()?;
    store.mark_complete("synthetic", "synthetic", &shards)?;
    Ok(written)
}
