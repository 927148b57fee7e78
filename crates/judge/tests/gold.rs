//! The rule judge against the hand-labelled gold set of reply pairs
//! (`tests/gold/judge-pairs/*.jsonl`): agreement, Cohen's κ and a confusion
//! matrix per family, failing below the goals.
//!
//! The pairs were written by clinicians' hands apart from the judge's code,
//! in eight styles (Reasoning/Recommendation, markdown headings, bold,
//! bullets, letters, shorthand, hedged with contingencies, long answers that
//! restate history), each with a label (updated, noticed, ignored,
//! wrong_direction; held or shifted for family N) and a rationale. Each
//! record also states its baseline chart's facts, from which the catalog's
//! own expectation for the pair is resolved — the expectation a real variant
//! of that chart would carry.
//!
//! Run with `CFEVAL_GOLD_REPORT=1` and `--nocapture` to print every
//! disagreement.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cfeval_judge::{Label, PairInput, RuleJudge};
use cfeval_perturb::Catalog;
use cfeval_schema::{CaseRow, DiffEntry, Fact};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Record {
    id: String,
    family: String,
    intervention: String,
    style: String,
    facts: Facts,
    edit: Edit,
    baseline: String,
    variant: String,
    label: String,
    rationale: String,
}

#[derive(Debug, Deserialize)]
struct Facts {
    cancer_type: String,
    stage: Option<String>,
    metastatic: Option<bool>,
    #[serde(default)]
    biomarkers: BTreeMap<String, String>,
    surgery: Option<String>,
    prior_line: Option<PriorLine>,
}

#[derive(Debug, Deserialize)]
struct PriorLine {
    regimen: String,
    outcome: String,
}

#[derive(Debug, Deserialize)]
struct Edit {
    fact_kind: Option<String>,
    fact_name: Option<String>,
    before: Option<String>,
    after: Option<String>,
}

/// A gold set's folder under `tests/gold/`.
fn gold_dir(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/gold")
        .join(set)
}

fn records(set: &str) -> Vec<Record> {
    let mut records = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(gold_dir(set))
        .expect("the gold folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("gold file");
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: Record = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{}:{}: {error}", file.display(), index + 1));
            records.push(record);
        }
    }
    records
}

fn fact(kind: &str, name: &str, value: &str) -> Fact {
    Fact::spanned(kind, name, value, "history", 0, "", "reference")
}

/// The baseline chart the record describes, as facts the catalog reads.
fn case(facts: &Facts) -> CaseRow {
    let mut case = cfeval_schema::sample::case(0);
    case.cancer_type = Some(facts.cancer_type.clone());
    let mut list = vec![fact("cancer_type", "cancer_type", &facts.cancer_type)];
    if let Some(stage) = &facts.stage {
        list.push(fact("stage", "group", stage));
    }
    if let Some(metastatic) = facts.metastatic {
        list.push(fact("metastatic", "metastatic", &metastatic.to_string()));
    }
    for (name, value) in &facts.biomarkers {
        list.push(fact("biomarker", name, value));
    }
    if let Some(surgery) = &facts.surgery {
        list.push(fact("surgery", "surgery", surgery));
    }
    if let Some(line) = &facts.prior_line {
        list.push(fact("prior_line", &line.regimen, &line.outcome));
    }
    case.facts = list;
    case
}

/// The gold label's name for a judge label.
fn gold_name(label: Label) -> &'static str {
    match label {
        Label::UpdatedCorrect => "updated",
        Label::AcknowledgedUnchanged => "noticed",
        Label::Ignored => "ignored",
        Label::UpdatedWrongDirection => "wrong_direction",
        Label::HeldCorrectly => "held",
        Label::ShiftedSpuriously => "shifted",
        Label::Uncertain => "uncertain",
    }
}

/// The CSS score a gold label carries.
fn score(label: &str) -> Option<f64> {
    match label {
        "updated" | "held" => Some(1.0),
        "noticed" => Some(0.5),
        "ignored" | "wrong_direction" | "shifted" => Some(0.0),
        _ => None,
    }
}

/// Cohen's κ of paired category labels.
fn kappa(pairs: &[(&str, &str)]) -> f64 {
    let n = pairs.len() as f64;
    if n == 0.0 {
        return f64::NAN;
    }
    let observed = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
    let mut first: BTreeMap<&str, f64> = BTreeMap::new();
    let mut second: BTreeMap<&str, f64> = BTreeMap::new();
    for (a, b) in pairs {
        *first.entry(a).or_default() += 1.0;
        *second.entry(b).or_default() += 1.0;
    }
    let expected: f64 = first
        .iter()
        .map(|(label, count)| count / n * second.get(label).copied().unwrap_or(0.0) / n)
        .sum();
    if expected >= 1.0 {
        return 1.0;
    }
    (observed - expected) / (1.0 - expected)
}

#[test]
fn kappa_matches_a_hand_computed_value() {
    // 10 pairs: 7 agree; marginals a: x6 y4, b: x5 y5 -> pe = .6*.5+.4*.5 = .5.
    let pairs = [
        ("x", "x"),
        ("x", "x"),
        ("x", "x"),
        ("x", "x"),
        ("x", "y"),
        ("x", "y"),
        ("y", "y"),
        ("y", "y"),
        ("y", "y"),
        ("y", "x"),
    ];
    assert!((kappa(&pairs) - 0.4).abs() < 1e-12);
}

struct Judged {
    record: Record,
    judged: &'static str,
    rationale: String,
}

fn judge_all(set: &str) -> Vec<Judged> {
    let judge = RuleJudge::builtin().expect("rule judge");
    let catalog =
        Catalog::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology/catalog.yaml"))
            .expect("catalog");
    records(set)
        .into_iter()
        .map(|record| {
            let intervention = catalog
                .intervention(&record.intervention)
                .unwrap_or_else(|| panic!("{}: unknown intervention {}", record.id, record.intervention));
            let chart = case(&record.facts);
            let regimen = (record.edit.fact_kind.as_deref() == Some("prior_line"))
                .then(|| record.edit.fact_name.clone())
                .flatten();
            let procedure = (record.edit.fact_kind.as_deref() == Some("surgery"))
                .then(|| record.edit.fact_name.clone())
                .flatten();
            let (expected_text, expected) = cfeval_perturb::expectation(
                intervention,
                &chart,
                regimen.as_deref(),
                procedure.as_deref(),
                Some(1),
            )
            .unwrap_or_else(|| panic!("{}: no expected direction covers the chart", record.id));
            let diff = vec![DiffEntry {
                op: "set_fact".into(),
                section: None,
                fact_kind: record.edit.fact_kind.clone(),
                fact_name: record.edit.fact_name.clone(),
                before: record.edit.before.clone(),
                after: record.edit.after.clone(),
            }];
            let input = PairInput {
                family: &record.family,
                intervention: &record.intervention,
                baseline_text: &record.baseline,
                baseline_recommendation: &record.baseline,
                variant_text: &record.variant,
                variant_recommendation: &record.variant,
                expected: Some(&expected),
                expected_text: Some(&expected_text),
                diff: &diff,
                baseline_dialogue: None,
                variant_dialogue: None,
            };
            if std::env::var("CFEVAL_GOLD_DEBUG").is_ok_and(|id| id == record.id) {
                for text in [&record.baseline, &record.variant] {
                    let reading = judge.ontology().read(text);
                    println!(
                        "{} plan ({}): {:?}",
                        record.id,
                        reading.plan.source.as_str(),
                        reading.plan.text
                    );
                    println!("{:#?}", reading.analysis);
                }
            }
            let verdict = judge
                .judge_pair(&input)
                .unwrap_or_else(|error| panic!("{}: {error}", record.id));
            Judged {
                judged: gold_name(verdict.label),
                rationale: verdict.rationale,
                record,
            }
        })
        .collect()
}

/// Agreement on the CSS score (uncertain counts as a disagreement), the same
/// over the pairs the judge decided, κ over the score and over the labels
/// (ignored and wrong direction apart), and the abstention rate.
#[derive(Debug, Default)]
struct Tally {
    total: usize,
    agree: usize,
    decided: usize,
    agree_decided: usize,
    score_pairs: Vec<(String, String)>,
    label_pairs: Vec<(String, String)>,
    confusion: BTreeMap<(String, String), usize>,
}

impl Tally {
    fn add(&mut self, gold: &str, judged: &str) {
        self.total += 1;
        *self
            .confusion
            .entry((gold.to_string(), judged.to_string()))
            .or_default() += 1;
        let agree = score(judged).is_some() && score(judged) == score(gold);
        self.agree += usize::from(agree);
        if judged != "uncertain" {
            self.decided += 1;
            self.agree_decided += usize::from(agree);
            let category = |label: &str| format!("{:?}", score(label));
            self.score_pairs.push((category(gold), category(judged)));
            self.label_pairs.push((gold.to_string(), judged.to_string()));
        }
    }

    fn agreement(&self) -> f64 {
        self.agree as f64 / self.total.max(1) as f64
    }

    fn decided_agreement(&self) -> f64 {
        self.agree_decided as f64 / self.decided.max(1) as f64
    }

    fn abstention(&self) -> f64 {
        1.0 - self.decided as f64 / self.total.max(1) as f64
    }

    fn kappa(&self) -> f64 {
        let pairs: Vec<(&str, &str)> = self
            .score_pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        kappa(&pairs)
    }

    fn label_kappa(&self) -> f64 {
        let pairs: Vec<(&str, &str)> = self
            .label_pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        kappa(&pairs)
    }
}

/// A gold set scored: overall, per family and per style.
struct Scored {
    overall: Tally,
    families: BTreeMap<String, Tally>,
}

fn line(name: &str, tally: &Tally) -> String {
    format!(
        "{name:<26} n={:>3} agreement={:.3} decided={:.3} abstained={:.3} kappa={:.3} label-kappa={:.3}",
        tally.total,
        tally.agreement(),
        tally.decided_agreement(),
        tally.abstention(),
        tally.kappa(),
        tally.label_kappa()
    )
}

/// Scores the rule judge on a gold set and prints the report (every
/// disagreement too with `CFEVAL_GOLD_REPORT`).
fn score_set(set: &str) -> Scored {
    scored(set, std::env::var_os("CFEVAL_GOLD_REPORT").is_some())
}

/// [`score_set`] without the disagreements unless `CFEVAL_GOLD_REPORT_FINAL`
/// asks for them too (the final set is a development set now; the set that
/// measures a round is never printed, nor read).
fn score_set_quietly(set: &str) -> Scored {
    scored(set, std::env::var_os("CFEVAL_GOLD_REPORT_FINAL").is_some())
}

fn scored(set: &str, verbose: bool) -> Scored {
    let judged = judge_all(set);
    let mut overall = Tally::default();
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut styles: BTreeMap<String, Tally> = BTreeMap::new();
    for item in &judged {
        let gold = item.record.label.as_str();
        overall.add(gold, item.judged);
        families
            .entry(item.record.family.clone())
            .or_default()
            .add(gold, item.judged);
        styles
            .entry(item.record.style.clone())
            .or_default()
            .add(gold, item.judged);
        if verbose && score(item.judged) != score(gold) {
            println!(
                "{} [{}] gold {gold} judged {}: {} | gold: {}",
                item.record.id, item.record.style, item.judged, item.rationale, item.record.rationale
            );
        }
    }
    println!("{set}");
    println!("{}", line("overall", &overall));
    for (family, tally) in &families {
        println!("{}", line(&format!("family {family}"), tally));
        for ((gold, judged), count) in &tally.confusion {
            println!("    gold {gold:<16} judged {judged:<16} {count}");
        }
    }
    for (style, tally) in &styles {
        println!("{}", line(&format!("style {style}"), tally));
    }
    Scored { overall, families }
}

#[test]
fn rule_judge_agrees_with_the_clinician_gold_set() {
    let Scored { overall, families } = score_set("judge-pairs");
    assert!(overall.total >= 300, "the gold set has {} pairs", overall.total);
    // Issue 13's goal, on the pairs the judge decides (an abstention goes
    // to a cascade's model judge): agreement >= 0.92 overall and >= 0.85 in
    // every family, kappa >= 0.85; and it abstains on at most 1 pair in 20.
    assert!(
        overall.decided_agreement() >= 0.92,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.85, "{}", line("overall", &overall));
    assert!(overall.abstention() <= 0.05, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.85, "{}", line(family, tally));
    }
}

/// A second gold set, written after the reading rules by another hand and
/// never read to write them: what the judge does on replies it was not
/// tuned on. Its floors hold the figures measured when it was added (see
/// BENCHMARKS.md) so that no change makes the judge worse on it.
#[test]
fn rule_judge_on_the_held_out_gold_set() {
    let Scored { overall, families } = score_set("judge-pairs-heldout");
    assert!(
        overall.total >= 150,
        "the held-out set has {} pairs",
        overall.total
    );
    // Measured when the set was added: 0.862 decided, kappa 0.777 (stop
    // 12's judge: 0.844, 0.746); families B and N 0.708. After the reading
    // rules of the generalisation round (arrows, durations, timed adjuvant
    // therapy, negated verbs, response-adapted pathways): 0.886 decided,
    // kappa 0.816, abstained 0.006; A 0.914, B 0.792, C 0.944, D 0.958,
    // E 0.875, N 0.792. After the round that read the final set (plan
    // labels and asides, post-operative settings, concurrent
    // chemoradiation): 0.892 decided, kappa 0.825, abstained 0.006; N 0.833.
    // After the round that read the fifth set (stopped drugs, progression
    // said by the scan, model-style lists): 0.916 decided, kappa 0.864,
    // abstained 0.006; A 0.914, B 0.958, C 0.944, D 0.958, E 0.875, N 0.833.
    assert!(
        overall.decided_agreement() >= 0.91,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.86, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.83, "{}", line(family, tally));
    }
}

/// A third gold set (`judge-pairs-fresh`), written by yet another hand in
/// ten other styles (markdown with tables, careful prose, SOAP, MDT minutes,
/// letters, telegraphic shorthand, hedged differentials, long restatements,
/// key: value blocks, numbered steps) after the held-out set had been read
/// to fix its failures: the measure of the judge on writing no rule was
/// read against. Its floors hold the figures measured when it was added.
#[test]
fn rule_judge_on_the_fresh_gold_set() {
    let Scored { overall, families } = score_set("judge-pairs-fresh");
    assert!(overall.total >= 150, "the fresh set has {} pairs", overall.total);
    // Measured when the set was added: 0.782 decided, kappa 0.654,
    // abstained 0.018; families B and D 0.652, E 0.750, A 0.778. After the
    // generalisation round: 0.838 decided, kappa 0.742, abstained 0.006;
    // A 0.806, B 0.833, C 0.944, D 0.652, E 0.792, N 0.958. After the round
    // that read the final set: 0.862 decided, kappa 0.778, abstained 0.006;
    // A 0.806, B 0.833, C 0.972, D 0.826, E 0.750, N 0.958. After the
    // round that read the fifth set: 0.874 decided, kappa 0.797, abstained
    // 0.006; A 0.806, B 0.875, C 0.972, D 0.826, E 0.792, N 0.958.
    assert!(
        overall.decided_agreement() >= 0.87,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.79, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.75, "{}", line(family, tally));
    }
}

/// A fourth gold set (`judge-pairs-final`, 168 pairs in ten more styles:
/// consult notes, bolded-lead answers, terse replies, board votes, emails,
/// resident presentations, guideline-citing answers, tables, risk-benefit
/// weighing, answers addressed to the patient), written while the reading
/// rules were being fixed on the held-out and fresh sets and never opened by
/// whoever wrote them. It was measured unseen, then became the next round's
/// development set (its disagreements print with
/// `CFEVAL_GOLD_REPORT_FINAL`); by default only its figures are printed.
#[test]
fn rule_judge_on_the_final_gold_set() {
    let Scored { overall, families } = score_set_quietly("judge-pairs-final");
    assert!(overall.total >= 150, "the final set has {} pairs", overall.total);
    // Measured when the set was added: 0.707 decided, kappa 0.528,
    // abstained 0.024; families A 0.706, B 0.750, C 0.743, D 0.652,
    // E 0.792, N 0.583. After the round that read its disagreements: 0.855
    // decided, kappa 0.764, abstained 0.018; A 0.943, B 0.833, C 0.778,
    // D 0.870, E 0.870, N 0.833. After the round that read the fifth set:
    // 0.867 decided, kappa 0.784, abstained 0.018; B 0.917, C 0.778.
    assert!(
        overall.decided_agreement() >= 0.86,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.78, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.77, "{}", line(family, tally));
    }
}

/// A fifth gold set (`judge-pairs-v5`, 168 pairs in ten more voices:
/// verbose and structured model answers, dictation, nurse navigators,
/// pharmacist drug-by-drug reviews, fellows' notes, brief chat, hedged
/// answers, non-native English, field-by-field answers), written while the
/// fourth round read the final set, never opened by whoever changed the
/// rules: the judge on writing it was not tuned to. Only its figures are
/// printed unless `CFEVAL_GOLD_REPORT_V5` asks for its disagreements (a
/// development set since the fifth round); its floors hold what was measured.
#[test]
fn rule_judge_on_the_fifth_gold_set() {
    let Scored { overall, families } = scored(
        "judge-pairs-v5",
        std::env::var_os("CFEVAL_GOLD_REPORT_V5").is_some(),
    );
    assert!(overall.total >= 150, "the fifth set has {} pairs", overall.total);
    // Measured when the set was added: 0.796 decided, kappa 0.671,
    // abstained 0.065; families A 0.848, B 0.609, C 0.824, D 0.739,
    // E 0.818, N 0.909. After the round that read its disagreements: 0.855
    // decided, kappa 0.765, abstained 0.018; A 0.857, B 0.826, C 0.886,
    // D 0.750, E 0.917, N 0.875.
    assert!(
        overall.decided_agreement() >= 0.85,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.76, "{}", line("overall", &overall));
    assert!(overall.abstention() <= 0.02, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.74, "{}", line(family, tally));
    }
}

/// A sixth gold set (`judge-pairs-v6`, 168 pairs in ten more voices:
/// concise and reasoning-trace model answers, nested bullets, radiation
/// oncologists', surgeons' and geriatric oncologists' views, trial
/// recruiters, second-opinion letters, checklists, Q&A), written during the
/// fifth round and never read by it: the judge on writing it was not tuned
/// to. Only its figures are printed; its floors hold what was measured when
/// it was added.
#[test]
fn rule_judge_on_the_sixth_gold_set() {
    let Scored { overall, families } = scored("judge-pairs-v6", false);
    assert!(overall.total >= 150, "the sixth set has {} pairs", overall.total);
    // Measured when the set was added: 0.731 decided, kappa 0.566,
    // abstained 0.048; families A 0.812, B 0.762, C 0.750, D 0.667,
    // E 0.708, N 0.652.
    assert!(
        overall.decided_agreement() >= 0.73,
        "{}",
        line("overall", &overall)
    );
    assert!(overall.kappa() >= 0.56, "{}", line("overall", &overall));
    for (family, tally) in &families {
        assert!(tally.decided_agreement() >= 0.65, "{}", line(family, tally));
    }
}

/// Every drug the cohort generator writes — each prior line's regimen, split
/// into its parts — is a drug or regimen of the judge's ontology, so the
/// rule judge can never miss a treatment the project's own charts name.
#[test]
fn every_drug_the_cohort_writes_is_in_the_ontology() {
    let ontology = cfeval_judge::Ontology::builtin().expect("ontology");
    let mut unknown = std::collections::BTreeSet::new();
    let mut seen = 0;
    for seed in 0..5 {
        let config = cfeval_synthesize::cohort::CohortConfig { cases: 400, seed };
        for case in cfeval_synthesize::cohort::generate(&config).expect("cohort") {
            for fact in case.facts.iter().filter(|fact| fact.kind == "prior_line") {
                for part in fact
                    .name
                    .split(['+', '/', ','])
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                {
                    seen += 1;
                    if ontology.regimen(part).0.is_empty() {
                        unknown.insert(part.to_string());
                    }
                }
            }
        }
    }
    assert!(seen > 500, "only {seen} regimen parts were generated");
    assert!(
        unknown.is_empty(),
        "drugs the ontology does not know: {unknown:?}"
    );
}
