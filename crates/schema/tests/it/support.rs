//! Row generators shared by the tests.

use cfeval_schema::*;
use proptest::prelude::*;

pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-zA-Z0-9 _+%./-]{1,24}", "\\PC{0,12}",]
}

pub fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

pub fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(0.5), Just(1.0), -1.0e6..1.0e6f64]
}

pub fn section() -> impl Strategy<Value = Section> {
    (
        text(),
        text(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(name, text, span_start, span_end)| Section {
            name,
            text,
            span_start,
            span_end,
        })
}

pub fn fact() -> impl Strategy<Value = Fact> {
    (
        (text(), text(), text(), text(), text()),
        (opt_text(), text(), any::<u64>(), any::<u64>(), text(), text()),
    )
        .prop_map(
            |(
                (kind, name, value, polarity, certainty),
                (detail, section, span_start, span_end, span_text, origin),
            )| Fact {
                kind,
                name,
                value,
                polarity,
                certainty,
                detail,
                section,
                span_start,
                span_end,
                span_text,
                origin,
            },
        )
}

pub fn case_row() -> impl Strategy<Value = CaseRow> {
    (
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            proptest::option::of(any::<u64>()),
            text(),
            opt_text(),
        ),
        proptest::collection::vec(section(), 0..4),
        proptest::collection::vec(fact(), 0..4),
        (
            proptest::collection::vec(
                (text(), finite()).prop_map(|(text, weight)| ConsensusItem { text, weight }),
                0..3,
            ),
            proptest::collection::vec(fact(), 0..2),
            opt_text(),
            proptest::collection::vec(text(), 0..2),
        ),
        proptest::collection::vec(
            (text(), text()).prop_map(|(key, value)| KeyValue { key, value }),
            0..3,
        ),
    )
        .prop_map(
            |(
                (run, case_id, source_id, source_format, source_path, source_line, source_text, cancer_type),
                sections,
                facts,
                (consensus, reference_facts, diagnosis, rules),
                extra,
            )| CaseRow {
                run,
                case_id,
                source_id,
                source_format,
                source_path,
                source_line,
                source_text,
                cancer_type,
                sections,
                facts,
                reference: Reference {
                    consensus,
                    facts: reference_facts,
                    diagnosis,
                    rules,
                },
                extra,
            },
        )
}

pub fn expected() -> impl Strategy<Value = Expected> {
    (
        text(),
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec(text(), 0..3),
        (opt_text(), opt_text(), opt_text(), opt_text()),
        (opt_text(), opt_text()),
    )
        .prop_map(
            |(
                direction,
                add,
                remove,
                (switch_line, intent, must_not_repeat, order_test),
                (diagnosis, urgency),
            )| Expected {
                direction,
                add,
                remove,
                switch_line,
                intent,
                must_not_repeat,
                order_test,
                diagnosis,
                urgency,
            },
        )
}

pub fn diff_entry() -> impl Strategy<Value = DiffEntry> {
    (text(), opt_text(), opt_text(), opt_text(), opt_text(), opt_text()).prop_map(
        |(op, section, fact_kind, fact_name, before, after)| DiffEntry {
            op,
            section,
            fact_kind,
            fact_name,
            before,
            after,
        },
    )
}

pub fn variant_row() -> impl Strategy<Value = VariantRow> {
    (
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            any::<bool>(),
            opt_text(),
            text(),
        ),
        (opt_text(), proptest::option::of(expected())),
        proptest::collection::vec(section(), 0..3),
        proptest::collection::vec(fact(), 0..3),
        (
            proptest::collection::vec(diff_entry(), 0..3),
            proptest::collection::vec(text(), 0..3),
        ),
    )
        .prop_map(
            |(
                (
                    run,
                    case_id,
                    variant_id,
                    intervention,
                    family,
                    applicable,
                    not_applicable_reason,
                    catalog_hash,
                ),
                (expected_text, expected),
                sections,
                facts,
                (diff, coherence),
            )| VariantRow {
                run,
                case_id,
                variant_id,
                intervention,
                family,
                applicable,
                not_applicable_reason,
                catalog_hash,
                expected_text,
                expected,
                sections,
                facts,
                diff,
                coherence,
            },
        )
}

pub fn trace_step() -> impl Strategy<Value = TraceStep> {
    (
        any::<u32>(),
        text(),
        opt_text(),
        opt_text(),
        opt_text(),
        opt_text(),
        opt_text(),
        opt_text(),
        (opt_text(), any::<u64>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |(
                step,
                kind,
                tool,
                arguments,
                result_hash,
                section,
                error,
                text,
                (speaker, input_tokens, output_tokens, latency_ms),
            )| TraceStep {
                step,
                kind,
                tool,
                arguments,
                result_hash,
                section,
                error,
                text,
                speaker,
                input_tokens,
                output_tokens,
                latency_ms,
            },
        )
}

pub fn dialogue_outcome() -> impl Strategy<Value = DialogueOutcome> {
    (
        (text(), any::<u32>(), any::<u32>(), text(), opt_text()),
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec(text(), 0..3),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            finite(),
            any::<u32>(),
        ),
        (
            proptest::option::of((any::<u32>(), any::<u32>(), any::<u32>())),
            opt_text(),
            opt_text(),
            opt_text(),
            opt_text(),
        ),
    )
        .prop_map(
            |(
                (patient, max_turns, turns, outcome, diagnosis),
                tests_requested,
                tests_returned,
                (
                    findings_elicited,
                    findings_total,
                    tests_elicited,
                    tests_total,
                    coverage,
                    measurement_fallbacks,
                ),
                (perception, perception_error, bias, diagnosis_before_reflection, notebook),
            )| DialogueOutcome {
                patient,
                max_turns,
                turns,
                outcome,
                diagnosis,
                tests_requested,
                tests_returned,
                findings_elicited,
                findings_total,
                tests_elicited,
                tests_total,
                coverage,
                perception: perception.map(|(confidence, compliance, consult_again)| Perception {
                    confidence,
                    compliance,
                    consult_again,
                }),
                perception_error,
                bias,
                diagnosis_before_reflection,
                notebook,
                measurement_fallbacks,
            },
        )
}

pub fn response_row() -> impl Strategy<Value = ResponseRow> {
    (
        (
            text(),
            text(),
            any::<bool>(),
            text(),
            text(),
            text(),
            text(),
            text(),
        ),
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            finite(),
            proptest::option::of(any::<u64>()),
        ),
        (
            text(),
            opt_text(),
            opt_text(),
            opt_text(),
            any::<u32>(),
            any::<bool>(),
            (opt_text(), any::<u32>()),
        ),
        (any::<u64>(), any::<u64>(), finite(), any::<u64>()),
        proptest::collection::vec(trace_step(), 0..4),
        proptest::collection::vec(text(), 0..3),
        (
            any::<u32>(),
            any::<u32>(),
            proptest::option::of(dialogue_outcome()),
            proptest::option::of(harness_outcome()),
        ),
    )
        .prop_map(
            |(
                (run, subject, is_control, mode, case_id, variant_id, intervention, family),
                (catalog_hash, backend, model, prompt_hash, request_hash, temperature, seed),
                (status, error, text, recommendation, attempts, cached, (finish_reason, tries)),
                (input_tokens, output_tokens, cost_usd, latency_ms),
                trace,
                sections_read,
                (tool_errors, sample, dialogue, harness),
            )| ResponseRow {
                run,
                subject,
                is_control,
                mode,
                case_id,
                variant_id,
                sample,
                intervention,
                family,
                catalog_hash,
                backend,
                model,
                prompt_set: prompt_hash.chars().rev().collect(),
                prompt_hash,
                request_hash,
                temperature,
                seed,
                status,
                error,
                text,
                recommendation,
                finish_reason,
                attempts,
                tries,
                cached,
                input_tokens,
                output_tokens,
                cost_usd,
                latency_ms,
                trace,
                sections_read,
                tool_errors,
                dialogue,
                harness,
            },
        )
}

pub fn harness_step() -> impl Strategy<Value = HarnessStep> {
    (
        (any::<u32>(), text(), opt_text()),
        proptest::collection::vec((text(), finite(), finite()), 0..3),
        (proptest::option::of(finite()), finite(), finite(), finite()),
        (any::<bool>(), opt_text(), opt_text()),
    )
        .prop_map(
            |(
                (step, action, argument),
                belief,
                (entropy, coverage, max_entropy, min_coverage),
                (new_evidence, blocked, problem),
            )| HarnessStep {
                step,
                action,
                argument,
                belief: belief
                    .into_iter()
                    .map(|(hypothesis, raw, probability)| Belief {
                        hypothesis,
                        raw,
                        probability,
                    })
                    .collect(),
                entropy,
                coverage,
                max_entropy,
                min_coverage,
                new_evidence,
                blocked,
                problem,
            },
        )
}

pub fn harness_outcome() -> impl Strategy<Value = HarnessOutcome> {
    (
        (text(), any::<u32>(), any::<u32>()),
        proptest::collection::vec(harness_step(), 0..3),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            finite(),
            proptest::option::of(finite()),
            any::<u32>(),
        ),
        (opt_text(), proptest::collection::vec(text(), 0..3), text()),
    )
        .prop_map(
            |(
                (outcome, max_steps, steps),
                trajectory,
                (
                    schema_failures,
                    invalid_beliefs,
                    unknown_hypotheses,
                    unknown_tools,
                    tool_errors,
                    retries,
                    language_fallbacks,
                ),
                (observer_blocks, spurious_drops, final_coverage, final_entropy, consultations),
                (answer, sections_before_answer, corpus_hash),
            )| HarnessOutcome {
                outcome,
                max_steps,
                steps,
                trajectory,
                schema_failures,
                invalid_beliefs,
                unknown_hypotheses,
                unknown_tools,
                tool_errors,
                retries,
                language_fallbacks,
                observer_blocks,
                spurious_drops,
                final_coverage,
                final_entropy,
                consultations,
                answer,
                sections_before_answer,
                corpus_hash,
            },
        )
}

pub fn judgment_row() -> impl Strategy<Value = JudgmentRow> {
    (
        (
            text(),
            text(),
            text(),
            any::<bool>(),
            text(),
            text(),
            text(),
            text(),
        ),
        (
            text(),
            text(),
            text(),
            proptest::option::of(finite()),
            opt_text(),
            opt_text(),
        ),
        (
            text(),
            opt_text(),
            text(),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
        ),
        (opt_text(), opt_text(), opt_text(), any::<u32>()),
    )
        .prop_map(
            |(
                (run, judge, subject, is_control, mode, case_id, variant_id, intervention),
                (family, catalog_hash, metric, score, label, rationale),
                (status, error, prompt_hash, changed, decisive_section_read),
                (decided_by, baseline_plan_source, plan_source, sample),
            )| JudgmentRow {
                run,
                judge,
                subject,
                is_control,
                mode,
                case_id,
                variant_id,
                sample,
                intervention,
                family,
                catalog_hash,
                metric,
                score,
                prompt_set: label.clone(),
                label,
                rationale,
                status,
                error,
                prompt_hash,
                changed,
                decisive_section_read,
                decided_by,
                baseline_plan_source,
                plan_source,
            },
        )
}

pub fn score_row() -> impl Strategy<Value = ScoreRow> {
    (
        (
            text(),
            text(),
            any::<bool>(),
            text(),
            text(),
            text(),
            text(),
            text(),
        ),
        (
            finite(),
            proptest::option::of(finite()),
            proptest::option::of(finite()),
            opt_text(),
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (run, subject, is_control, mode, judge, metric, level, group),
                (value, ci_low, ci_high, ci_method, n_tuples, n_cases),
            )| {
                ScoreRow {
                    run,
                    subject,
                    is_control,
                    mode,
                    judge,
                    metric,
                    level,
                    group,
                    value,
                    ci_low,
                    ci_high,
                    prompt_set: ci_method.clone(),
                    ci_method,
                    n_tuples,
                    n_cases,
                }
            },
        )
}

/// A judgments row numbered `i`, for volume tests.
pub fn numbered_judgment(i: u64) -> JudgmentRow {
    JudgmentRow {
        run: "run".into(),
        judge: "rule".into(),
        subject: format!("subject-{}", i % 6),
        is_control: i.is_multiple_of(6),
        mode: "single_shot".into(),
        case_id: format!("case-{}", i % 224),
        variant_id: format!("variant-{i}"),
        sample: 0,
        intervention: format!("A{}", i % 3 + 1),
        family: "A".into(),
        catalog_hash: "c".repeat(8),
        metric: "css".into(),
        score: Some((i % 3) as f64 / 2.0),
        label: Some("updated_correct".into()),
        rationale: Some(format!("rationale {i}")),
        status: "ok".into(),
        error: None,
        prompt_hash: "p".into(),
        prompt_set: Some("neutral".into()),
        changed: Some(i.is_multiple_of(2)),
        decisive_section_read: None,
        decided_by: Some("rule".into()),
        baseline_plan_source: Some("label".into()),
        plan_source: Some("heading".into()),
    }
}
