//! `cfeval judge --judge rubric:<model>` against a scripted judge server:
//! the server reads the items and safety items it is sent and scores them
//! by a fixed rule; the test recomputes every domain score and every
//! profile's composite by hand from the sub-dimension rows and the
//! rubric's weights, and checks that N/A never enters a composite, that a
//! bad answer is retried once and then recorded as a judge failure, and
//! that a response with a safety item present is flagged whatever its
//! composite.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{JudgmentRow, ResponseRow, ScoreRow, VariantRow};
use serde_json::{Value, json};

use crate::support::{cfeval, rows, succeeded as ok, workspace_root};

fn path(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The score the scripted judge gives item `id` of an answer of `length`
/// characters: 1–5, varying by item and answer.
fn scripted_score(id: &str, length: usize) -> u64 {
    let sum: u64 = id.bytes().map(u64::from).sum();
    (sum + length as u64) % 5 + 1
}

/// What the server does on a call, by the answer it is sent.
#[derive(Default)]
struct Script {
    /// The last data object seen (a repair retry answers for it).
    last: Option<Value>,
    /// Answers (their text) whose first answer is out of range.
    bad_once: BTreeSet<String>,
    /// Answers whose every answer leaves an item out.
    always_bad: BTreeSet<String>,
    /// Data objects the judge was sent, by answer text.
    seen: BTreeMap<String, Value>,
}

fn answer_for(data: &Value, broken: Option<&str>) -> String {
    let answer = data["answer"].as_str().unwrap_or_default();
    let quote: String = answer.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    let mut scores = serde_json::Map::new();
    for item in data["items"].as_array().into_iter().flatten() {
        let id = item["id"].as_str().unwrap_or_default();
        let score = if id == "3d" {
            json!({"score": "na", "na_rule": "causal_claim_only", "quote": "", "justification": "no causal claim is made"})
        } else {
            json!({"score": scripted_score(id, answer.len()), "na_rule": null, "quote": quote, "justification": "as scripted"})
        };
        scores.insert(id.to_string(), score);
    }
    match broken {
        Some("range") => {
            if let Some(first) = scores.values_mut().next() {
                first["score"] = json!(7);
                first["na_rule"] = Value::Null;
            }
        }
        Some("missing") => {
            let first = scores.keys().next().cloned().unwrap_or_default();
            scores.remove(&first);
        }
        _ => {}
    }
    let mut safety = serde_json::Map::new();
    for item in data["safety_items"].as_array().into_iter().flatten() {
        let id = item["id"].as_str().unwrap_or_default();
        // Every safety item is found present: a flag whatever the scores.
        safety.insert(id.to_string(), json!({"present": true, "quote": quote}));
    }
    json!({"scores": scores, "safety": safety}).to_string()
}

fn server(script: Arc<Mutex<Script>>) -> BackgroundServer {
    let responder: Responder = Arc::new(move |_model: &str, prompt: &str, _seed: Option<u64>| {
        let mut script = script.lock().expect("script");
        if prompt.starts_with("Your answer was not valid") {
            let Some(data) = script.last.clone() else {
                return "no data".to_string();
            };
            let answer = data["answer"].as_str().unwrap_or_default().to_string();
            let broken = script.always_bad.contains(&answer).then_some("missing");
            return answer_for(&data, broken);
        }
        let Some(data) = prompt
            .find('{')
            .and_then(|start| serde_json::from_str::<Value>(&prompt[start..]).ok())
        else {
            return "not a rubric request".to_string();
        };
        let answer = data["answer"].as_str().unwrap_or_default().to_string();
        script.last = Some(data.clone());
        script.seen.insert(answer.clone(), data.clone());
        let broken = if script.always_bad.contains(&answer) {
            Some("missing")
        } else if script.bad_once.contains(&answer) {
            Some("range")
        } else {
            None
        };
        answer_for(&data, broken)
    });
    BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("test server")
}

/// The rubric's profiles and its domains' sub-dimension ids, read from the
/// YAML itself (not through cfeval).
/// Profile → domain → weight.
type Profiles = BTreeMap<String, BTreeMap<String, f64>>;

fn rubric_tables() -> (Profiles, BTreeMap<String, Vec<String>>) {
    let text = std::fs::read_to_string(workspace_root().join("data/rubrics/clinical-reasoning-v1.yaml"))
        .expect("rubric");
    let value: serde_norway::Value = serde_norway::from_str(&text).expect("yaml");
    let mut profiles = BTreeMap::new();
    for (name, weights) in value["profiles"].as_mapping().expect("profiles") {
        let weights: BTreeMap<String, f64> = weights
            .as_mapping()
            .expect("weights")
            .iter()
            .map(|(domain, weight)| {
                (
                    domain.as_str().expect("domain").to_string(),
                    weight.as_f64().expect("weight"),
                )
            })
            .collect();
        profiles.insert(name.as_str().expect("name").to_string(), weights);
    }
    let mut domains = BTreeMap::new();
    for domain in value["domains"].as_sequence().expect("domains") {
        let subs = domain["subdimensions"]
            .as_sequence()
            .expect("subs")
            .iter()
            .map(|sub| sub["id"].as_str().expect("id").to_string())
            .collect();
        domains.insert(domain["id"].as_str().expect("id").to_string(), subs);
    }
    (profiles, domains)
}

/// cohort (`cases`, `seed`) → synthesize → perturb, in `dir/run`.
fn prepared_run(dir: &Path, cases: usize, seed: u64) -> std::path::PathBuf {
    let run = dir.join("run");
    let summary = ok(
        cfeval(&[
            "cohort",
            "--cases",
            &cases.to_string(),
            "--seed",
            &seed.to_string(),
            "--out",
            path(&dir.join("cohort")),
        ]),
        "cohort",
    );
    let summary: Value = serde_json::from_str(summary.trim()).expect("cohort summary");
    let jsonl = summary["jsonl"].as_str().expect("jsonl").to_string();
    ok(
        cfeval(&["synthesize", "--input", &jsonl, "--out", path(&run)]),
        "synthesize",
    );
    let catalog = workspace_root().join("data/packs/oncology/catalog.yaml");
    ok(
        cfeval(&["perturb", "--run", path(&run), "--catalog", path(&catalog)]),
        "perturb",
    );
    run
}

/// `cfeval judge` with the rubric judge on four cases, one call at a time.
fn rubric_judge(run: &Path, judge: &str, url: &str, profile: &str) -> Output {
    cfeval(&[
        "judge",
        "--run",
        path(run),
        "--judge",
        judge,
        "--base-url",
        url,
        "--profile",
        profile,
        "--concurrency",
        "1",
        "--cases",
        "4",
    ])
}

#[test]
fn rubric_scores_match_hand_computation_for_every_profile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = prepared_run(dir.path(), 8, 3);
    for subject in ["control/reference", "control/blind-surgery"] {
        ok(
            cfeval(&["infer", "--run", path(&run), "--subject", subject]),
            "infer",
        );
    }
    let responses: Vec<ResponseRow> = rows(&run);
    let variants: Vec<VariantRow> = rows(&run);
    // Two answers misbehave: one is out of range once, one leaves an item
    // out every time.
    // The four cases `--cases 4` takes: the lowest id hashes.
    let mut case_ids: Vec<&str> = responses.iter().map(|row| row.case_id.as_str()).collect();
    case_ids.sort_by_key(|case| (cfeval_schema::ids::id_hash(case), case.to_string()));
    case_ids.dedup();
    let chosen: BTreeSet<&str> = case_ids.into_iter().take(4).collect();
    let texts: Vec<String> = responses
        .iter()
        .filter(|row| chosen.contains(row.case_id.as_str()))
        .filter_map(|row| row.text.clone())
        .collect();
    let distinct: BTreeSet<&String> = texts.iter().collect();
    let mut distinct = distinct.into_iter();
    let bad_once = distinct.next().expect("an answer").clone();
    let always_bad = distinct.next().expect("another answer").clone();
    let script = Arc::new(Mutex::new(Script {
        bad_once: BTreeSet::from([bad_once.clone()]),
        always_bad: BTreeSet::from([always_bad.clone()]),
        ..Script::default()
    }));
    let server = server(script.clone());
    let url = server.openai_base_url();
    let (profiles, domains) = rubric_tables();
    assert_eq!(profiles.len(), 4);
    let judge = "rubric:vllm/rubric-judge";
    let mut calls_after_first = None;
    for profile in profiles.keys() {
        let report = ok(rubric_judge(&run, judge, &url, profile), "rubric judge");
        // The profile is cfeval's arithmetic, not the judge's: another
        // profile asks the same questions, answered from the response cache.
        match calls_after_first {
            None => calls_after_first = Some(server.requests()),
            Some(calls) => assert_eq!(
                server.requests(),
                calls,
                "profile {profile} was served from the cache"
            ),
        }
        let report: Value = serde_json::from_str(report.trim()).expect("report");
        let judgments: Vec<JudgmentRow> = rows::<JudgmentRow>(&run)
            .into_iter()
            .filter(|row| row.judge == judge)
            .collect();
        let cases: BTreeSet<&str> = judgments.iter().map(|row| row.case_id.as_str()).collect();
        assert_eq!(cases.len(), 4, "--cases 4 scores four cases");
        let judged: Vec<&ResponseRow> = responses
            .iter()
            .filter(|row| cases.contains(row.case_id.as_str()))
            .collect();
        assert_eq!(report["responses"], json!(judged.len()), "{report}");
        let weights = &profiles[profile];
        let mut failures = 0;
        for response in &judged {
            let mine: BTreeMap<&str, &JudgmentRow> = judgments
                .iter()
                .filter(|row| {
                    row.subject == response.subject
                        && row.variant_id == response.variant_id
                        && row.mode == response.mode
                })
                .map(|row| (row.metric.as_str(), row))
                .collect();
            let text = response.text.clone().unwrap_or_default();
            let composite = mine["rubric.composite"];
            let flag = mine["rubric.safety_flag"];
            if text == always_bad {
                failures += 1;
                assert_eq!(composite.status, "error");
                assert_eq!(flag.status, "error");
                assert_eq!(composite.score, None, "a failure is never guessed");
                let error = composite.error.as_deref().unwrap_or_default();
                assert!(
                    error.contains("after one repair retry") && error.contains("has no score"),
                    "{error}"
                );
                assert_eq!(mine.len(), 2, "a failed response has only its two headline rows");
                continue;
            }
            assert_eq!(composite.status, "ok", "{:?}", composite.error);
            // Every domain: the mean of its scored sub-dimensions; N/A ones out.
            let mut weighted = 0.0;
            let mut total = 0.0;
            for (domain, subs) in &domains {
                let scored: Vec<f64> = subs
                    .iter()
                    .filter_map(|sub| mine.get(format!("rubric.{domain}.{sub}").as_str()))
                    .filter_map(|row| row.score)
                    .collect();
                let row = mine[format!("rubric.{domain}").as_str()];
                if scored.is_empty() {
                    assert_eq!(
                        (row.score, row.label.as_deref()),
                        (None, Some("na")),
                        "domain {domain}"
                    );
                    continue;
                }
                for sub in subs {
                    if let Some(row) = mine.get(format!("rubric.{domain}.{sub}").as_str())
                        && let Some(score) = row.score
                    {
                        assert_eq!(score, scripted_score(sub, text.len()) as f64, "{sub}");
                    }
                }
                let mean = scored.iter().sum::<f64>() / scored.len() as f64;
                assert!(
                    (row.score.expect("domain score") - mean).abs() < 1e-12,
                    "domain {domain}"
                );
                weighted += weights[domain] * mean;
                total += weights[domain];
            }
            let expected = weighted / total;
            assert!(
                (composite.score.expect("composite") - expected).abs() < 1e-9,
                "profile {profile}: {:?} vs {expected}",
                composite.score
            );
            assert_eq!(composite.label.as_deref(), Some(profile.as_str()));
            // 3d was marked N/A by the judge under its rule; 6c is N/A
            // before asking (one turn), and neither has a score.
            assert_eq!(mine["rubric.3.3d"].label.as_deref(), Some("na"));
            assert_eq!(mine["rubric.6.6c"].score, None);
            assert!(
                mine["rubric.6.6c"]
                    .rationale
                    .as_deref()
                    .unwrap_or_default()
                    .contains("sycophancy_multi_turn_only")
            );
            // Every safety item is present in the script: flagged, whatever
            // the composite, exactly when the chart has a prespecified item
            // (the oncology pack's: a class the change rules out, a regimen
            // that must not be repeated, a line the chart records progression on).
            let variant = variants
                .iter()
                .find(|variant| variant.variant_id == response.variant_id)
                .expect("the response's variant");
            let items =
                variant.expected.as_ref().is_some_and(|expected| {
                    !expected.remove.is_empty() || expected.must_not_repeat.is_some()
                }) || variant.facts.iter().any(|fact| {
                    fact.kind == "prior_line" && fact.value == "progression" && fact.polarity != "negated"
                });
            let items = usize::from(items);
            let expected_flag = if items > 0 { 1.0 } else { 0.0 };
            assert_eq!(flag.score, Some(expected_flag), "{:?}", flag.rationale);
            assert_eq!(
                flag.label.as_deref(),
                Some(if items > 0 { "flagged" } else { "no_items" })
            );
            if text == bad_once {
                assert_eq!(composite.status, "ok", "one bad answer is repaired by the retry");
            }
        }
        assert!(failures >= 1, "the always-bad answer was judged");
    }
    // A chart with progression carries its prespecified item.
    let seen = script.lock().expect("script").seen.clone();
    assert!(
        seen.values()
            .flat_map(|data| data["safety_items"].as_array().cloned().unwrap_or_default())
            .any(|item| item["error"].as_str().unwrap_or_default().contains("progress")),
        "a progression chart's safety item reached the judge"
    );
    // A rerun with the same settings makes no call.
    let before = server.requests();
    ok(
        rubric_judge(&run, judge, &url, profiles.keys().last().expect("a profile")),
        "rerun",
    );
    assert_eq!(server.requests(), before, "the complete unit is skipped");

    // Aggregate: the rubric's means, its safety-flag rate and its link to
    // CSS, and judge–human agreement, against the judgments by hand.
    ok(
        cfeval(&["judge", "--run", path(&run), "--judge", "rule"]),
        "rule judge",
    );
    let judgments: Vec<JudgmentRow> = rows(&run);
    let rubric_rows: Vec<&JudgmentRow> = judgments.iter().filter(|row| row.judge == judge).collect();
    // Human scores: the judge's own score on 1a, one more (capped) on 1b.
    let mut labels = String::from("subject,mode,case_id,intervention,metric,score,rater\n");
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    for row in &rubric_rows {
        let Some(score) = row.score.filter(|_| row.sample == 0) else {
            continue;
        };
        let human = match row.metric.as_str() {
            "rubric.1.1a" => score,
            "rubric.1.1b" => (score + 1.0).min(5.0),
            _ => continue,
        };
        labels.push_str(&format!(
            "{},{},{},{},{},{human},ann\n",
            row.subject, row.mode, row.case_id, row.intervention, row.metric
        ));
        pairs.push((human, score));
    }
    assert!(pairs.len() >= 4, "labelled items");
    let labels_file = dir.path().join("rubric-labels.csv");
    std::fs::write(&labels_file, labels).expect("labels");
    ok(
        cfeval(&[
            "aggregate",
            "--run",
            path(&run),
            "--rubric-labels",
            path(&labels_file),
        ]),
        "aggregate",
    );
    let scores: Vec<ScoreRow> = rows(&run);
    let score = |subject: &str, judge_name: &str, metric: &str, level: &str, group: &str| {
        scores
            .iter()
            .find(|row| {
                row.subject == subject
                    && row.judge == judge_name
                    && row.metric == metric
                    && row.level == level
                    && row.group == group
                    && row.ci_method.as_deref() != Some("bca")
            })
            .unwrap_or_else(|| panic!("no {metric} {level}/{group} for {subject} under {judge_name}"))
    };
    for subject in ["control/reference", "control/blind-surgery"] {
        let mine = |metric: &str| -> Vec<f64> {
            rubric_rows
                .iter()
                .filter(|row| row.subject == subject && row.metric == metric && row.status == "ok")
                .filter_map(|row| row.score)
                .collect()
        };
        for metric in ["rubric.composite", "rubric.safety_flag", "rubric.2"] {
            let values = mine(metric);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let row = score(subject, judge, metric, "overall", "all");
            assert!(
                (row.value - mean).abs() < 1e-9,
                "{subject} {metric}: {} vs {mean}",
                row.value
            );
            assert_eq!(row.n_tuples, values.len() as u64);
            let (low, high) = (row.ci_low.expect("interval"), row.ci_high.expect("interval"));
            assert!(low <= row.value && row.value <= high, "{subject} {metric}");
        }
        let failed = score(subject, judge, "rubric_judge_error", "overall", "all");
        let composites = rubric_rows
            .iter()
            .filter(|row| row.subject == subject && row.metric == "rubric.composite")
            .count() as u64;
        assert_eq!(failed.n_tuples, composites);
    }
    // Blind to surgery: family D ignored, the others updated — the gap is
    // the difference of the two means, by hand.
    let pair = format!("{judge}|rule");
    let css: BTreeMap<(String, String), f64> = judgments
        .iter()
        // The CSS families only: a negative control (N) is held, not updated.
        .filter(|row| row.judge == "rule" && row.metric == "css" && row.status == "ok" && row.family != "N")
        .filter_map(|row| Some(((row.subject.clone(), row.variant_id.clone()), row.score?)))
        .collect();
    let (mut updated, mut ignored) = (Vec::new(), Vec::new());
    for row in &rubric_rows {
        if row.subject != "control/blind-surgery" || row.metric != "rubric.composite" || row.status != "ok" {
            continue;
        }
        match css.get(&(row.subject.clone(), row.variant_id.clone())) {
            Some(&score) if score >= 1.0 => updated.push(row.score.expect("composite")),
            Some(&score) if score <= 0.0 => ignored.push(row.score.expect("composite")),
            _ => {}
        }
    }
    if !updated.is_empty() && !ignored.is_empty() {
        let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
        let gap = score(
            "control/blind-surgery",
            &pair,
            "rubric_gap_updated_minus_ignored",
            "overall",
            "all",
        );
        assert!(
            (gap.value - (mean(&updated) - mean(&ignored))).abs() < 1e-9,
            "{}",
            gap.value
        );
        assert!(gap.ci_low.is_some());
    }
    // Judge against human, domain 1: Pearson by hand.
    let n = pairs.len() as f64;
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = pairs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let (vx, vy): (f64, f64) = (
        pairs.iter().map(|p| (p.0 - mx).powi(2)).sum(),
        pairs.iter().map(|p| (p.1 - my).powi(2)).sum(),
    );
    let pearson = score("all", judge, "rubric_pearson.1", "comparison", "all");
    assert!((pearson.value - cov / (vx * vy).sqrt()).abs() < 1e-9);
    assert_eq!(pearson.n_tuples, pairs.len() as u64);
    assert!(scores.iter().any(|row| row.metric == "rubric_kappa_quadratic.1"));
    // The report's rubric section.
    let report = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(
        report.contains("Clinical-reasoning rubric (judge rubric:vllm/rubric-judge)"),
        "{report}"
    );
    assert!(report.contains("Rubric against CSS"));
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(html.contains("Rubric domain"), "the heatmap is drawn");
}

/// The rater workflow: a blinded sample with its scoring sheet, raters'
/// filled sheets checked against the key (bad rows named by file and row),
/// and the imported scores set against the judge per domain.
#[test]
fn raters_score_a_blinded_sample_and_the_judge_is_set_against_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = prepared_run(dir.path(), 4, 5);
    let server = server(Arc::new(Mutex::new(Script::default())));
    let url = server.openai_base_url();
    ok(
        cfeval(&[
            "infer",
            "--run",
            path(&run),
            "--subject",
            "vllm/answerer",
            "--base-url",
            &url,
            "--family",
            "D",
        ]),
        "infer",
    );
    let judge = "rubric:vllm/rubric-judge";
    ok(
        cfeval(&[
            "judge",
            "--run",
            path(&run),
            "--judge",
            judge,
            "--base-url",
            &url,
            "--concurrency",
            "1",
        ]),
        "rubric judge",
    );
    let sample_dir = dir.path().join("sample");
    let said = ok(
        cfeval(&[
            "labels",
            "rubric-sample",
            "--run",
            path(&run),
            "--per-family",
            "2",
            "--seed",
            "1",
            "--out",
            path(&sample_dir),
        ]),
        "rubric-sample",
    );
    assert!(said.contains("sampled "), "{said}");
    // Blinded: neither the subject nor the mode reaches the raters.
    for name in ["rubric-items.csv", "rubric-items.jsonl", "rubric-sheet.csv"] {
        let text = std::fs::read_to_string(sample_dir.join(name)).expect(name);
        assert!(
            !text.contains("vllm/answerer") && !text.contains("single_shot"),
            "{name} names the subject"
        );
    }
    // A rater fills the sheet: the judge's own score on domain 2, one below
    // it (floored at 1) on domain 7; one row names a metric that is none.
    let judgments: Vec<JudgmentRow> = rows(&run);
    let keys: Vec<Vec<String>> = csv_rows(&sample_dir.join("rubric-key.csv"));
    let sheet: Vec<Vec<String>> = csv_rows(&sample_dir.join("rubric-sheet.csv"));
    let header = &sheet[0];
    let column = |name: &str| header.iter().position(|field| field == name).expect(name);
    let (item, metric, score) = (column("item_id"), column("metric"), column("score"));
    let mut filled = csv::Writer::from_path(dir.path().join("ann.csv")).expect("sheet");
    filled.write_record(header).expect("header");
    let mut pairs = Vec::new();
    for row in &sheet[1..] {
        let key = keys
            .iter()
            .find(|key| key[0] == row[item])
            .expect("the item's key");
        let judged = judgments
            .iter()
            .find(|judgment| {
                judgment.judge == judge && judgment.variant_id == key[4] && judgment.metric == row[metric]
            })
            .and_then(|judgment| judgment.score);
        let mut out = row.clone();
        match (row[metric].as_str(), judged) {
            (name, Some(value)) if name.starts_with("rubric.2.") => {
                out[score] = format!("{value}");
                pairs.push((value, value));
            }
            (name, Some(value)) if name.starts_with("rubric.7.") => {
                let human = (value - 1.0).max(1.0);
                out[score] = format!("{human}");
                pairs.push((human, value));
            }
            _ => {}
        }
        filled.write_record(&out).expect("row");
    }
    filled.flush().expect("flush");
    drop(filled);
    let labels = dir.path().join("rubric-labels.csv");
    let imported = ok(
        cfeval(&[
            "labels",
            "rubric-import",
            "--key",
            path(&sample_dir.join("rubric-key.csv")),
            "--out",
            path(&labels),
            path(&dir.path().join("ann.csv")),
        ]),
        "rubric-import",
    );
    assert!(
        imported.contains(&format!("imported {} rubric scores", pairs.len())),
        "{imported}"
    );
    // A bad sheet is refused whole, each bad row named.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        format!(
            "item_id,metric,score\n{},rubric.9.9z,3\nRnotanitem,rubric.1.1a,3\n{},rubric.1.1a,7\n",
            keys[1][0], keys[1][0]
        ),
    )
    .expect("bad sheet");
    let refused = cfeval(&[
        "labels",
        "rubric-import",
        "--key",
        path(&sample_dir.join("rubric-key.csv")),
        "--out",
        path(&dir.path().join("never.csv")),
        path(&bad),
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stdout);
    for (row, fragment) in [
        (2, "not a domain or sub-dimension"),
        (3, "not in the key"),
        (4, "not an integer from 1 to 5"),
    ] {
        assert!(
            said.contains(&format!("bad.csv:{row}: ")) && said.contains(fragment),
            "{said}"
        );
    }
    assert!(!dir.path().join("never.csv").exists());
    ok(
        cfeval(&["aggregate", "--run", path(&run), "--rubric-labels", path(&labels)]),
        "aggregate",
    );
    let scores: Vec<ScoreRow> = rows(&run);
    let domain_two: Vec<&ScoreRow> = scores
        .iter()
        .filter(|row| row.judge == judge && row.metric == "rubric_kappa_quadratic.2")
        .collect();
    assert_eq!(domain_two.len(), 1);
    assert!(
        (domain_two[0].value - 1.0).abs() < 1e-12,
        "the rater agrees on domain 2: κ = 1"
    );
    let seven = scores
        .iter()
        .find(|row| row.judge == judge && row.metric == "rubric_kappa_quadratic.7")
        .expect("κ on domain 7");
    assert!(seven.value < 1.0, "one below the judge is not full agreement");
}

/// A CSV file's records, header first.
fn csv_rows(file: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(file)
        .expect("csv");
    reader
        .records()
        .map(|record| record.expect("record").iter().map(String::from).collect())
        .collect()
}

/// The diagnosis pack: OSCE cases are single encounters (domain 4 and 5b
/// N/A before asking), the composite takes the pack's `diagnosis`
/// profile, the red-flag variant (F3) carries the escalation item, a case
/// whose diagnosis is must-not-miss carries that item.
#[test]
fn the_diagnosis_pack_gives_the_rubric_its_profile_and_its_safety_items() {
    let Some(cases) = crate::support::osce_cases() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let pack = workspace_root().join("data/packs/general-medicine");
    let pipeline = dir.path().join("osce.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[run]\nname = \"osce-rubric\"\npack = \"{}\"\n\n[cases]\ninputs = [\"{}\"]\nlimit = 12\n\n\
             [[subjects]]\nname = \"control/reference\"\n\n[[judges]]\nname = \"rule\"\n\n[aggregate]\nresamples = 100\n",
            pack.display(),
            cases.display()
        ),
    )
    .expect("pipeline");
    let run = dir.path().join("run");
    ok(
        cfeval(&["run", path(&pipeline), "--run-dir", path(&run)]),
        "cfeval run",
    );
    let script = Arc::new(Mutex::new(Script::default()));
    let server = server(script.clone());
    let judge = "rubric:vllm/rubric-judge";
    ok(
        cfeval(&[
            "judge",
            "--run",
            path(&run),
            "--judge",
            judge,
            "--base-url",
            &server.openai_base_url(),
        ]),
        "rubric judge",
    );
    let judgments: Vec<JudgmentRow> = rows::<JudgmentRow>(&run)
        .into_iter()
        .filter(|row| row.judge == judge)
        .collect();
    let composites: Vec<&JudgmentRow> = judgments
        .iter()
        .filter(|row| row.metric == "rubric.composite")
        .collect();
    assert!(!composites.is_empty());
    for row in &composites {
        assert_eq!(row.status, "ok", "{:?}", row.error);
        assert_eq!(row.label.as_deref(), Some("diagnosis"), "the pack's profile");
    }
    for metric in ["rubric.4", "rubric.5.5b", "rubric.6.6c"] {
        assert!(
            judgments
                .iter()
                .filter(|row| row.metric == metric)
                .all(|row| row.label.as_deref() == Some("na") && row.score.is_none()),
            "{metric} is N/A on a single-turn single encounter"
        );
    }
    let seen = script.lock().expect("script").seen.clone();
    let items: Vec<String> = seen
        .values()
        .flat_map(|data| data["safety_items"].as_array().cloned().unwrap_or_default())
        .filter_map(|item| item["error"].as_str().map(str::to_string))
        .collect();
    let variants: Vec<VariantRow> = rows(&run);
    if variants
        .iter()
        .any(|variant| variant.intervention == "F3" && variant.applicable)
    {
        assert!(
            items.iter().any(|item| item.contains("haemodynamic instability")),
            "the red-flag variant's escalation item reached the judge"
        );
    }
    // Every case whose diagnosis is one of the pack's must-not-miss ones
    // carries the item on every response (the scripted judge finds each
    // item present: all of them are flagged).
    let must_not_miss = items.iter().filter(|item| item.contains("must-not-miss")).count();
    let flagged = judgments
        .iter()
        .filter(|row| row.metric == "rubric.safety_flag" && row.label.as_deref() == Some("flagged"))
        .count();
    assert!(flagged >= must_not_miss.min(1));
}
