//! Reading a plan's text into what it plans: every treatment mention
//! classified by context, settings from the order of a plan, derived
//! classes, intent, the signature and the core a verdict compares.

use std::collections::BTreeSet;

use super::{Analysis, Ontology, Reading, Treatment, clauses, words};
use crate::reading::context::{Status, tokens};
use crate::reading::plan::find_plan;

/// What a planned treatment is for the order of a plan (see `analyze`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SettingRole {
    Operation,
    Systemic,
    Chemoradiation,
    Other,
}

/// One treatment mention of a clause: its drugs, its classes, its status,
/// and whether a continue word governs it (see `continue_words`).
type ReadTreatment = (Vec<String>, Vec<String>, Status, bool);

impl Ontology {
    /// Reads a whole reply: finds its plan, then reads the plan.
    pub fn read(&self, reply: &str) -> Reading {
        // A phrase that names no treatment ("Medical Oncology" under a
        // signature) is no content.
        let has_content = |text: &str| {
            let tokens = words(text);
            self.treatments
                .find(&tokens)
                .iter()
                .any(|(_, _, treatment)| *treatment != Treatment::Nothing)
                || self.markers.contains(&tokens)
        };
        let plan = find_plan(&self.vocabulary, reply, &has_content);
        // Whether the reply says its operation is done ("s/p colectomy",
        // "after this R0 lobectomy") and the disease is not metastatic: drug
        // therapy its plan gives without a setting word is then adjuvant.
        let surgery = self.mentions(reply, "surgery");
        let operation_done = surgery.contains("resected") && !surgery.contains("unresected");
        let stage = self.mentions(reply, "stage");
        let metastatic = stage.contains("metastatic") || stage.contains("stage:IV");
        let mut analysis = self.analyze_after(&plan.text, operation_done && !metastatic);
        analysis.operation_done = operation_done;
        // A test ordered anywhere in the reply is ordered ("I have asked
        // pathology to perform HER2 IHC" before the recommendation).
        for clause in clauses(reply) {
            let tokens = tokens(&clause);
            let items: Vec<(usize, usize)> = self
                .treatments
                .find(&tokens)
                .iter()
                .map(|(start, end, _)| (*start, *end))
                .collect();
            for marker in self.ordered_tests(&tokens, &items) {
                analysis.signature.insert(format!("test:{marker}"));
                analysis.tests.insert(marker);
            }
        }
        Reading { plan, analysis }
    }

    /// Reads a plan's text (or any recommendation) into what it plans.
    pub fn analyze(&self, text: &str) -> Analysis {
        self.analyze_after(text, false)
    }

    /// [`Ontology::analyze`] for a plan given after an operation that is done
    /// (`operated`): its drug therapy is adjuvant unless it says otherwise.
    fn analyze_after(&self, text: &str, operated: bool) -> Analysis {
        let mut analysis = Analysis::default();
        let mut planned_classes = BTreeSet::new();
        let mut monotherapy_word = false;
        let mut explicit_intents = BTreeSet::new();
        // Each clause's treatments with their status, and the earliest line
        // of therapy the clause plans.
        let mut read: Vec<(Option<usize>, Vec<ReadTreatment>)> = Vec::new();
        // Drugs the plan stops: their other mentions recount them.
        let mut stopped: BTreeSet<String> = BTreeSet::new();
        for clause in clauses(text) {
            let tokens = tokens(&clause);
            let found = self.treatments.find(&tokens);
            let items: Vec<(usize, usize)> = found.iter().map(|(start, end, _)| (*start, *end)).collect();
            let statuses = self.context.classify(&tokens, &items, &items);
            let stop_spans = self.stop_words.find(&tokens);
            let stops = !stop_spans.is_empty();
            let continues = self.continue_words.find(&tokens);
            let mut treatments = Vec::new();
            let mut after_operation = false;
            for (index, ((start, end, treatment), status)) in found.iter().zip(statuses).enumerate() {
                let (drugs, classes) = self.expand(treatment);
                let next = found.get(index + 1).map_or(tokens.len(), |(next, _, _)| *next);
                let status = if status == Status::Planned && self.status_column_stops(&tokens, *end, next) {
                    Status::Negated
                } else {
                    status
                };
                if stops && status == Status::Negated {
                    stopped.extend(drugs.iter().cloned());
                }
                // Continued or given again: a continue word before it in
                // its clause with no stop word between.
                let continued = continues.iter().any(|(_, word_end, ())| {
                    *word_end <= *start
                        && !stop_spans
                            .iter()
                            .any(|(stop_start, _, ())| (*word_end..*start).contains(stop_start))
                });
                let time_reference = self.time_reference(&tokens, *start, &classes);
                let status = if status == Status::Planned && time_reference {
                    Status::Historical
                } else {
                    status
                };
                after_operation |= time_reference && status == Status::Historical;
                treatments.push((drugs, classes, status, continued));
            }
            // Drug therapy timed from an operation ("CAPOX, starting within
            // 8 weeks of surgery", "pembrolizumab 4 weeks after resection")
            // is given after it: adjuvant.
            if after_operation
                && treatments.iter().any(|(_, classes, status, _)| {
                    *status == Status::Planned && self.setting_role(classes) == SettingRole::Systemic
                })
            {
                treatments.push((
                    Vec::new(),
                    vec!["adjuvant_therapy".into()],
                    Status::Planned,
                    false,
                ));
            }
            // Radiotherapy and chemotherapy given at once ("60 Gy with
            // weekly carboplatin") are chemoradiation.
            let concurrent = self.concurrent.contains(&tokens);
            let position = |class: &str| {
                found
                    .iter()
                    .zip(&treatments)
                    .position(|(_, (_, classes, status, _))| {
                        *status == Status::Planned && classes.iter().any(|own| own == class)
                    })
            };
            if concurrent
                && position("definitive_chemoradiation").is_none()
                && let (Some(radiation), Some(chemotherapy)) =
                    (position("radiotherapy"), position("chemotherapy"))
            {
                let (first, second) = (radiation.min(chemotherapy), radiation.max(chemotherapy));
                let between = &tokens[found[first].1..found[second].0];
                let step = between.iter().enumerate().any(|(offset, token)| {
                    token == crate::reading::context::ARROW
                        || self.context.terminators.longest_at(between, offset).is_some()
                });
                if !step {
                    treatments.push((
                        Vec::new(),
                        vec!["definitive_chemoradiation".into()],
                        Status::Planned,
                        false,
                    ));
                }
            }
            // A monotherapy word says what it stands beside: "IO mono — not
            // appropriate" rules monotherapy out, it does not plan it.
            let monotherapy_words = self.monotherapy.find(&tokens);
            let spans: Vec<(usize, usize)> = monotherapy_words
                .iter()
                .map(|(start, end, ())| (*start, *end))
                .collect();
            // Right beside a treatment ("single-agent pembrolizumab isn't
            // the right call", "pembrolizumab alone"), it has that
            // treatment's status.
            let beside = |(start, end): (usize, usize)| {
                found
                    .iter()
                    .position(|(item_start, item_end, _)| *item_end == start || *item_start == end)
                    .map(|index| treatments[index].2)
            };
            monotherapy_word |= spans
                .iter()
                .zip(self.context.classify(&tokens, &spans, &items))
                .any(|(span, status)| beside(*span).unwrap_or(status) == Status::Planned);
            let intents = self.intent.find(&tokens);
            let spans: Vec<(usize, usize)> = intents.iter().map(|(start, end, _)| (*start, *end)).collect();
            for ((_, _, intent), status) in intents.iter().zip(self.context.classify(&tokens, &spans, &items))
            {
                if status == Status::Planned {
                    explicit_intents.insert(intent.clone());
                }
            }
            let lines = self.lines.find(&tokens);
            let spans: Vec<(usize, usize)> = lines.iter().map(|(start, end, _)| (*start, *end)).collect();
            let mut rank = None;
            for ((_, end, line), status) in lines.iter().zip(self.context.classify(&tokens, &spans, &items)) {
                // A line word takes the status of the treatment it
                // introduces ("switch to FOLFIRI only if progression is
                // confirmed" plans no switch).
                let introduced = found
                    .iter()
                    .position(|(start, _, _)| start >= end)
                    .map(|index| treatments[index].2);
                if status == Status::Planned && introduced.is_none_or(|status| status == Status::Planned) {
                    analysis.lines.insert(line.clone());
                    if let Some(order) = self.line_order.iter().position(|name| name == line) {
                        rank = Some(rank.map_or(order, |rank: usize| rank.min(order)));
                    }
                }
            }
            analysis.tests.extend(self.ordered_tests(&tokens, &items));
            analysis.unchanged |= self.unchanged_cues.contains(&tokens);
            read.push((rank, treatments));
        }
        // When a plan names several lines of therapy, the earliest is the
        // plan and the later ones are sequencing ("1L FOLFOX + nivo; 2L:
        // T-DXd"): their treatments are contingent.
        let earliest = read
            .iter()
            .filter(|(_, treatments)| {
                treatments
                    .iter()
                    .any(|(_, _, status, _)| *status == Status::Planned)
            })
            .filter_map(|(rank, _)| *rank)
            .min();
        // What each planned treatment is, in the order the plan names them.
        let mut sequence: Vec<SettingRole> = Vec::new();
        for (rank, treatments) in read {
            let later = matches!((rank, earliest), (Some(rank), Some(earliest)) if rank > earliest);
            for (drugs, classes, status, continued) in treatments {
                let status = if later && status == Status::Planned {
                    Status::Conditional
                } else {
                    status
                };
                // A stopped drug's other mentions recount it.
                let status = if status == Status::Planned
                    && !continued
                    && !drugs.is_empty()
                    && drugs.iter().all(|drug| stopped.contains(drug))
                {
                    Status::Historical
                } else {
                    status
                };
                let into = match status {
                    Status::Planned => {
                        sequence.push(self.setting_role(&classes));
                        analysis.drugs.extend(drugs);
                        planned_classes.extend(classes);
                        continue;
                    }
                    Status::Negated => &mut analysis.avoided,
                    Status::Historical => &mut analysis.history,
                    Status::Conditional | Status::Hypothetical => &mut analysis.contingent,
                };
                into.extend(drugs);
                into.extend(classes);
            }
        }
        // Drug therapy (or chemoradiation) named before a planned operation
        // is given before it, drug therapy named after it is given after it:
        // "FOLFOX, then chemoradiation, then TME" is neoadjuvant whether or
        // not it says so.
        if let Some(first) = sequence.iter().position(|role| *role == SettingRole::Operation) {
            let last = sequence
                .iter()
                .rposition(|role| *role == SettingRole::Operation)
                .unwrap_or(first);
            if sequence[..first]
                .iter()
                .any(|role| matches!(role, SettingRole::Systemic | SettingRole::Chemoradiation))
            {
                planned_classes.insert("neoadjuvant_therapy".into());
            }
            if sequence[last + 1..].contains(&SettingRole::Systemic) {
                planned_classes.insert("adjuvant_therapy".into());
            }
        } else if operated
            && sequence.contains(&SettingRole::Systemic)
            && !explicit_intents.contains("palliative")
            && !["neoadjuvant_therapy", "adjuvant_therapy", "perioperative_therapy"]
                .iter()
                .any(|setting| planned_classes.contains(*setting))
        {
            // Drug therapy after an operation the reply says is done, with
            // no setting word and no palliative one, is adjuvant ("s/p
            // colectomy. Plan: CAPOX x 4").
            planned_classes.insert("adjuvant_therapy".into());
        }
        self.derive(&mut planned_classes, monotherapy_word);
        analysis.intent = if explicit_intents.len() == 1 {
            explicit_intents.into_iter().next()
        } else if planned_classes
            .iter()
            .any(|class| self.curative_classes.contains(class))
        {
            Some("curative".into())
        } else if planned_classes.contains("systemic_therapy") || planned_classes.contains("palliative_care")
        {
            Some("palliative".into())
        } else {
            None
        };
        if planned_classes
            .iter()
            .any(|class| self.active_classes.contains(class))
        {
            analysis.followup = planned_classes
                .iter()
                .filter(|class| self.followup_classes.contains(*class))
                .cloned()
                .collect();
            planned_classes.retain(|class| !analysis.followup.contains(class));
        }
        analysis.classes = planned_classes;
        let mut signature = BTreeSet::new();
        signature.extend(
            analysis
                .classes
                .iter()
                .filter(|class| !self.ancillary_classes.contains(*class))
                .map(|class| format!("class:{class}")),
        );
        let drugs: BTreeSet<String> = self
            .groups(&analysis.drugs)
            .into_iter()
            .map(|group| format!("drug:{group}"))
            .collect();
        analysis.core = drugs.clone();
        analysis.core.extend(
            analysis
                .classes
                .iter()
                .filter(|class| self.core_classes.contains(*class))
                .map(|class| format!("class:{class}")),
        );
        signature.extend(drugs);
        signature.extend(analysis.tests.iter().map(|marker| format!("test:{marker}")));
        if let Some(intent) = &analysis.intent {
            signature.insert(format!("intent:{intent}"));
        }
        analysis.signature = signature;
        analysis
    }

    /// What a planned treatment is for the order of a plan: an operation,
    /// drug therapy, chemoradiation, or something else (a setting word,
    /// radiotherapy, follow-up).
    fn setting_role(&self, classes: &[String]) -> SettingRole {
        let has = |class: &str| classes.iter().any(|own| own == class);
        let systemic = self
            .derived
            .get("systemic_therapy")
            .is_some_and(|sources| sources.iter().any(|source| has(source)));
        if classes
            .iter()
            .any(|class| self.time_reference_classes.contains(class))
        {
            SettingRole::Operation
        } else if has("definitive_chemoradiation") {
            SettingRole::Chemoradiation
        } else if systemic && !has("neoadjuvant_therapy") && !has("adjuvant_therapy") {
            SettingRole::Systemic
        } else {
            SettingRole::Other
        }
    }

    /// Whether a stop word stands right after a treatment that ends at
    /// `end`, past its dose and schedule and before the next treatment at
    /// `next` (`Letrozole 2.5 mg daily — STOP`, `nivolumab: discontinue`).
    fn status_column_stops(&self, tokens: &[String], end: usize, next: usize) -> bool {
        let mut position = end;
        while position < next {
            if tokens[position] == ":" || tokens[position].chars().any(char::is_numeric) {
                position += 1;
            } else if let Some((length, ())) = self.dose_words.longest_at(tokens, position) {
                position += length;
            } else {
                break;
            }
        }
        position < next
            && self
                .stop_words
                .longest_at(tokens, position)
                .is_some_and(|(length, ())| position + length <= next)
    }

    /// Whether a procedure mention at `start` is a point in time ("within
    /// 12 weeks of surgery", "after total gastrectomy"): one of its classes
    /// is a time-reference class and a time-reference word precedes it,
    /// past any fillers.
    pub(super) fn time_reference(&self, tokens: &[String], start: usize, classes: &[String]) -> bool {
        if !classes
            .iter()
            .any(|class| self.time_reference_classes.contains(class))
        {
            return false;
        }
        tokens[..start]
            .iter()
            .rev()
            .find(|token| !self.time_reference_fillers.contains(*token))
            .is_some_and(|token| self.time_reference_words.contains(token))
    }

    /// The markers a clause orders a test for: an order word (`order`,
    /// `send`, `testing`, `pending`) that is planned or conditional, in a
    /// clause that reports no result (`showed`, `returned`) — "HER2 IHC 2+,
    /// ISH amplified" is a result. Calling a marker unknown is not ordering
    /// its test (it is a mention of the fact, see [`Ontology::mentions`]);
    /// a negated or historical order (`no need to repeat`, `was tested`)
    /// never counts.
    fn ordered_tests(&self, tokens: &[String], items: &[(usize, usize)]) -> Vec<String> {
        let markers = self.markers.find(tokens);
        if markers.is_empty() || self.result_words.contains(tokens) {
            return Vec::new();
        }
        let orders: Vec<(usize, usize)> = self
            .order_words
            .find(tokens)
            .iter()
            .map(|(start, end, ())| (*start, *end))
            .collect();
        let ordered = self
            .context
            .classify(tokens, &orders, items)
            .into_iter()
            .any(|status| matches!(status, Status::Planned | Status::Conditional));
        if ordered {
            markers.into_iter().map(|(_, _, marker)| marker).collect()
        } else {
            Vec::new()
        }
    }

    pub(super) fn derive(&self, classes: &mut BTreeSet<String>, monotherapy_word: bool) {
        // Derived classes may build on each other (platinum → chemotherapy → systemic).
        for _ in 0..3 {
            for (derived, sources) in &self.derived {
                if sources.iter().any(|source| classes.contains(source)) {
                    classes.insert(derived.clone());
                }
            }
        }
        if classes.contains("immunotherapy") && (monotherapy_word || !classes.contains("chemotherapy")) {
            classes.insert("immunotherapy_monotherapy".into());
        }
    }
}

#[cfg(test)]
mod tests {

    use crate::ontology::testing::{ontology, set};

    #[test]
    fn negated_stretches_are_not_planned() {
        let ontology = ontology();
        let analysis = ontology
            .analyze("docetaxel with or without ramucirumab; no rechallenge with a PD-1/PD-L1 inhibitor");
        assert!(
            analysis.drugs.contains("ramucirumab"),
            "with or without offers the drug"
        );
        assert!(!analysis.classes.contains("immunotherapy"));
        assert!(analysis.avoided.contains("immunotherapy"));
        let surveillance = ontology.analyze("surveillance without adjuvant chemotherapy");
        assert!(surveillance.classes.contains("surveillance"));
        assert!(!surveillance.classes.contains("adjuvant_therapy"));
        assert!(!surveillance.classes.contains("chemotherapy"));
        assert_eq!(surveillance.intent.as_deref(), Some("curative"));
    }

    #[test]
    fn monotherapy_intent_line_and_tests() {
        let ontology = ontology();
        assert!(
            ontology
                .analyze("pembrolizumab monotherapy")
                .classes
                .contains("immunotherapy_monotherapy")
        );
        assert!(
            ontology
                .analyze("Keytruda 200 mg q3w")
                .classes
                .contains("immunotherapy_monotherapy")
        );
        let combo = ontology.analyze("carboplatin/pemetrexed/pembrolizumab");
        assert!(!combo.classes.contains("immunotherapy_monotherapy"));
        assert!(combo.classes.contains("platinum_chemotherapy"));
        let palliative = ontology.analyze("FOLFOX + bevacizumab");
        assert_eq!(palliative.intent.as_deref(), Some("palliative"));
        assert_eq!(
            ontology.analyze("second-line docetaxel, palliative intent").lines,
            set(&["second"])
        );
        assert_eq!(
            ontology.analyze("HER2 status is unknown: send HER2 IHC").tests,
            set(&["HER2"])
        );
        assert_eq!(ontology.analyze("ER/PR testing by IHC").tests, set(&["ER", "PR"]));
        assert!(ontology.analyze("HER2-positive disease: THP").tests.is_empty());
        assert_eq!(ontology.analyze("PD-L1 result pending").tests, set(&["PD-L1"]));
    }

    #[test]
    fn drug_therapy_before_or_after_a_planned_operation_has_that_setting() {
        let ontology = ontology();
        let before = ontology.analyze("FOLFOX x 4 months, then chemoradiation to 50.4 Gy, then TME");
        assert!(before.classes.contains("neoadjuvant_therapy"), "{before:?}");
        assert!(!before.classes.contains("adjuvant_therapy"), "{before:?}");
        let after =
            ontology.analyze("Lumpectomy and sentinel node biopsy, then docetaxel-cyclophosphamide x4");
        assert!(after.classes.contains("adjuvant_therapy"), "{after:?}");
        assert!(!after.classes.contains("neoadjuvant_therapy"), "{after:?}");
        // No planned operation, no setting from order.
        let alone = ontology.analyze("FOLFOX, then chemoradiation");
        assert!(!alone.classes.contains("neoadjuvant_therapy"), "{alone:?}");
    }

    #[test]
    fn what_a_drug_failed_or_a_plan_leaves_for_later_is_not_planned() {
        let ontology = ontology();
        let switch = ontology.analyze(
            "Switch to lorlatinib, which covers most alectinib-resistance mutations. Platinum-pemetrexed is the line after that.",
        );
        assert!(switch.drugs.contains("lorlatinib"), "{switch:?}");
        assert!(!switch.drugs.contains("alectinib"), "{switch:?}");
        assert!(
            !switch.drugs.contains("pemetrexed") && switch.contingent.contains("pemetrexed"),
            "{switch:?}"
        );
        let stopped = ontology.analyze("d/c gem/nab-P. 2L nal-IRI + 5-FU/LV");
        assert!(stopped.avoided.contains("gemcitabine"), "{stopped:?}");
        let planned =
            ontology.analyze("TCHP followed by surgery, then completion of a year of HER2-directed therapy");
        assert!(!planned.history.contains("her2_targeted"), "{planned:?}");
    }

    /// A drug the patient takes, one that failed (before or after the
    /// word), one possible only in theory and those that remain for later
    /// are not planned; a preferred drug is.
    #[test]
    fn taken_failed_theoretical_and_remaining_drugs_are_not_planned() {
        let ontology = ontology();
        let taking = ontology.analyze("He takes sunitinib 50 mg with hand-foot syndrome.");
        assert!(
            taking.history.contains("sunitinib") && !taking.drugs.contains("sunitinib"),
            "{taking:?}"
        );
        let failed =
            ontology.analyze("Osimertinib has failed; we would prefer amivantamab with chemotherapy.");
        assert!(!failed.drugs.contains("osimertinib"), "{failed:?}");
        assert!(failed.drugs.contains("amivantamab"), "{failed:?}");
        let before = ontology.analyze("He failed osimertinib.");
        assert!(before.history.contains("osimertinib"), "{before:?}");
        let theory = ontology.analyze("A higher dose of everolimus is theoretically possible.");
        assert!(!theory.drugs.contains("everolimus"), "{theory:?}");
        let later = ontology.analyze("Cabozantinib and lenvatinib remain for later.");
        assert!(
            !later.drugs.contains("cabozantinib") && later.contingent.contains("lenvatinib"),
            "{later:?}"
        );
    }

    #[test]
    fn a_line_word_takes_the_status_of_the_treatment_it_introduces() {
        let ontology = ontology();
        let analysis = ontology.analyze(
            "Continue pembrolizumab; switch to platinum-pemetrexed only if progression is confirmed",
        );
        assert!(!analysis.lines.contains("next"), "{analysis:?}");
        assert!(ontology.analyze("switch to FOLFIRI").lines.contains("next"));
    }

    #[test]
    fn supportive_care_and_radiation_doses_read_as_clinicians_mean_them() {
        let ontology = ontology();
        let chemo = ontology.analyze("Gemcitabine + Abraxane, first line; early palliative care involvement");
        assert!(!chemo.classes.contains("palliative_care") && chemo.followup.contains("palliative_care"));
        assert!(
            ontology
                .analyze("best supportive care")
                .classes
                .contains("palliative_care")
        );
        assert!(
            ontology
                .analyze("SBRT 50 Gy in 5 fractions")
                .classes
                .contains("radiotherapy")
        );
        assert_eq!(
            ontology
                .analyze("concurrent chemoradiotherapy 60 Gy with carboplatin/paclitaxel")
                .signature,
            ontology
                .analyze("concurrent chemoradiotherapy with carboplatin/paclitaxel")
                .signature
        );
        // A result is not an order, wherever the reply states it.
        let reading = ontology
            .read("HER2-positive, ER/PR-negative, with a biopsy-proven axillary node.\n\nPlan: TCHP.");
        assert!(reading.analysis.tests.is_empty(), "{:?}", reading.analysis);
        let ordered = ontology
            .read("I have asked pathology to perform HER2 IHC.\n\nRecommendation: THP if HER2-positive.");
        assert!(ordered.analysis.tests.contains("HER2"), "{:?}", ordered.analysis);
    }

    #[test]
    fn words_that_name_no_treatment_are_not_read_as_one() {
        let ontology = ontology();
        let analysis = ontology.analyze("send PD-L1 on the resection specimen; surgical margins clear");
        assert!(!analysis.classes.contains("surgical_resection"), "{analysis:?}");
        assert_eq!(analysis.tests, set(&["PD-L1"]));
    }

    #[test]
    fn a_procedure_named_as_a_point_in_time_is_history() {
        let ontology = ontology();
        let analysis = ontology
            .analyze("adjuvant CAPOX starting within 8 weeks of surgery; B12 after total gastrectomy");
        assert!(!analysis.classes.contains("surgical_resection"), "{analysis:?}");
        assert!(analysis.classes.contains("adjuvant_therapy"));
        assert!(
            ontology
                .analyze("FOLFIRINOX then pancreaticoduodenectomy")
                .classes
                .contains("surgical_resection")
        );
    }

    #[test]
    fn a_drug_the_plan_stops_is_not_planned_by_its_other_mentions() {
        let ontology = ontology();
        let analysis = ontology.analyze(
            "FOLFIRI and cetuximab gave eight months of control. Scans now show new lung nodules, so we are stopping the FOLFIRI and cetuximab; plan is trifluridine/tipiracil with bevacizumab.",
        );
        assert!(!analysis.drugs.contains("cetuximab"), "{analysis:?}");
        assert!(analysis.drugs.contains("bevacizumab"), "{analysis:?}");
        // A drug the plan continues or gives again stays planned.
        let again = ontology.analyze(
            "Oxaliplatin was stopped for neuropathy a year ago. Re-introduce oxaliplatin with capecitabine.",
        );
        assert!(again.drugs.contains("oxaliplatin"), "{again:?}");
    }

    #[test]
    fn a_stop_word_after_a_treatment_and_its_dose_is_its_status() {
        let ontology = ontology();
        let sheet = ontology.analyze(
            "- Anastrozole 1 mg PO daily — STOP\n- Ribociclib 600 mg days 1-21: discontinue\n- Fulvestrant 500 mg IM — START",
        );
        assert!(!sheet.drugs.contains("ribociclib"), "{sheet:?}");
        assert!(sheet.avoided.contains("ribociclib"), "{sheet:?}");
        assert!(sheet.drugs.contains("fulvestrant"), "{sheet:?}");
        let planned = ontology.analyze("Fulvestrant 500 mg, stop date to be decided");
        assert!(planned.drugs.contains("fulvestrant"), "{planned:?}");
    }

    #[test]
    fn a_cancelled_operation_is_not_planned() {
        let ontology = ontology();
        for text in [
            "The gastrectomy is cancelled; FOLFOX for palliation",
            "we are cancelling the gastrectomy, FOLFOX for palliation",
        ] {
            let analysis = ontology.analyze(text);
            assert!(
                !analysis.classes.contains("surgical_resection"),
                "{text}: {analysis:?}"
            );
            assert!(
                analysis.avoided.contains("surgical_resection"),
                "{text}: {analysis:?}"
            );
        }
    }

    #[test]
    fn an_eligibility_condition_is_not_a_contingency() {
        let ontology = ontology();
        let analysis = ontology.analyze("Atezolizumab for a year if no contraindication to immunotherapy");
        assert!(analysis.drugs.contains("atezolizumab"), "{analysis:?}");
        let toxicity = ontology.analyze("pembrolizumab every 6 weeks if no grade 3 colitis");
        assert!(toxicity.drugs.contains("pembrolizumab"), "{toxicity:?}");
    }

    #[test]
    fn follow_up_beside_a_treatment_is_not_a_surveillance_plan() {
        let ontology = ontology();
        let treated = ontology.analyze("definitive SBRT, then CT surveillance");
        assert!(!treated.classes.contains("surveillance") && treated.followup.contains("surveillance"));
        assert!(
            ontology
                .analyze("surveillance CT every 6 months")
                .classes
                .contains("surveillance")
        );
    }

    #[test]
    fn later_lines_named_beside_an_earlier_one_are_contingent() {
        let ontology = ontology();
        let analysis = ontology.analyze(
            "1L FOLFOX + nivolumab.
2L: ramucirumab + paclitaxel.",
        );
        assert!(
            analysis.drugs.contains("oxaliplatin") && !analysis.drugs.contains("ramucirumab"),
            "{analysis:?}"
        );
        assert!(analysis.contingent.contains("ramucirumab"));
        let only_later = ontology.analyze("2L: ramucirumab + paclitaxel");
        assert!(only_later.drugs.contains("ramucirumab"));
    }

    #[test]
    fn results_are_not_orders_and_unknowns_are() {
        let ontology = ontology();
        assert!(
            ontology
                .analyze("HER2 IHC 2+, ISH amplified: TCHP")
                .tests
                .is_empty()
        );
        assert!(ontology.analyze("HER2 testing showed IHC 3+").tests.is_empty());
        assert_eq!(
            ontology.analyze("PD-L1 not reported; send PD-L1 22C3").tests,
            set(&["PD-L1"])
        );
        assert!(
            ontology
                .analyze("no need to repeat HER2 testing")
                .tests
                .is_empty()
        );
    }

    #[test]
    fn skipped_rejected_and_out_rule_a_treatment_out() {
        let ontology = ontology();
        let skipped = ontology.analyze("Give FOLFOX and skip the bevacizumab this time");
        assert!(skipped.avoided.contains("bevacizumab"), "{skipped:?}");
        assert!(skipped.drugs.contains("oxaliplatin"), "{skipped:?}");
        let out = ontology.analyze("Tamoxifen and ribociclib are out; capecitabine.");
        assert!(
            out.avoided.contains("tamoxifen") && out.drugs.contains("capecitabine"),
            "{out:?}"
        );
        let rejected = ontology.analyze("Upfront radiotherapy was rejected by the panel");
        assert!(!rejected.classes.contains("radiotherapy"), "{rejected:?}");
    }

    #[test]
    fn radiotherapy_with_chemotherapy_at_once_is_chemoradiation() {
        let ontology = ontology();
        assert_eq!(
            ontology
                .analyze("66 Gy with concurrent weekly cisplatin")
                .signature,
            ontology.analyze("Chemoradiation with weekly cisplatin").signature
        );
        let sequential = ontology.analyze("Four cycles of carboplatin and paclitaxel, then radiotherapy");
        assert!(
            !sequential.classes.contains("definitive_chemoradiation"),
            "{sequential:?}"
        );
    }

    #[test]
    fn a_future_negation_reaches_back_to_its_subject() {
        let analysis = ontology().analyze("Letrozole won't be enough now; paclitaxel weekly.");
        assert!(analysis.avoided.contains("letrozole"), "{analysis:?}");
        assert!(analysis.drugs.contains("paclitaxel"), "{analysis:?}");
    }

    #[test]
    fn an_operation_said_done_is_history_and_the_alternative_is_contingent() {
        let ontology = ontology();
        let done = ontology.analyze("Mastectomy now done; letrozole for five years");
        assert!(done.history.contains("surgical_resection"), "{done:?}");
        let todo = ontology.analyze("Colectomy to be done next month");
        assert!(todo.classes.contains("surgical_resection"), "{todo:?}");
        let fallback = ontology.analyze("Docetaxel, with carboplatin as the fallback");
        assert!(fallback.contingent.contains("carboplatin"), "{fallback:?}");
        let restricted = ontology.analyze("Olaparib is restricted by its licence to BRCA carriers");
        assert!(restricted.contingent.contains("olaparib"), "{restricted:?}");
    }

    #[test]
    fn prostate_hormone_therapy_is_endocrine_therapy() {
        let ontology = ontology();
        let triplet = ontology.analyze("ADT with Eligard, Nubeqa and six cycles of Taxotere");
        assert!(
            triplet.drugs.contains("leuprolide")
                && triplet.drugs.contains("darolutamide")
                && triplet.drugs.contains("docetaxel"),
            "{triplet:?}"
        );
        assert!(triplet.classes.contains("endocrine_therapy"));
    }

    #[test]
    fn drug_therapy_after_an_operation_said_done_is_adjuvant() {
        let ontology = ontology();
        let operated =
            ontology.read("Impression: s/p right hemicolectomy, pT3N1.\n\nPlan: CAPOX for 3 months.");
        assert!(
            operated.analysis.classes.contains("adjuvant_therapy"),
            "{operated:?}"
        );
        assert_eq!(operated.analysis.intent.as_deref(), Some("curative"));
        assert!(operated.analysis.operation_done);
        let metastatic =
            ontology.read("Impression: s/p right hemicolectomy, now liver metastases.\n\nPlan: CAPOX.");
        assert!(
            !metastatic.analysis.classes.contains("adjuvant_therapy"),
            "{metastatic:?}"
        );
        let sequel = ontology.read("Plan: gastrectomy after three cycles of FLOT, then post-op FLOT.");
        assert!(!sequel.analysis.operation_done, "{sequel:?}");
        let untouched = ontology.read("Impression: pT3N1 on biopsy.\n\nPlan: CAPOX for 3 months.");
        assert!(
            !untouched.analysis.classes.contains("adjuvant_therapy"),
            "{untouched:?}"
        );
    }

    #[test]
    fn an_operation_after_an_anatomical_word_is_a_point_in_time() {
        let ontology = ontology();
        let after = ontology.analyze("pT3N1, R0 after laparoscopic sigmoid colectomy; CAPOX x4");
        assert!(after.history.contains("surgical_resection"), "{after:?}");
        let this = ontology.analyze("Adjuvant cisplatin after this R0 lobectomy");
        assert!(!this.classes.contains("surgical_resection"), "{this:?}");
        let shorthand = ontology.analyze("adj CAPOX; neoadj FOLFIRINOX considered; periop FLOT not needed");
        assert!(shorthand.classes.contains("adjuvant_therapy"), "{shorthand:?}");
    }

    #[test]
    fn a_signature_naming_a_department_is_not_the_plan() {
        let reading = ontology().read(
            "Dear Sam,\n\nShe is ER-positive and node-negative.\n\nWe will start anastrozole.\n\nBest wishes,\nJo Smith, Radiation Oncology",
        );
        assert_eq!(reading.plan.text, "We will start anastrozole.");
    }

    #[test]
    fn read_finds_the_plan_then_reads_only_what_it_plans() {
        let ontology = ontology();
        let reading = ontology.read(
            "**Assessment:** s/p mastectomy, HER2-positive.
**Plan:** Herceptin and Perjeta (Phesgo SC); no role for endocrine therapy; on progression, Enhertu.",
        );
        assert_eq!(reading.plan.source.as_str(), "label");
        assert_eq!(reading.analysis.drugs, set(&["pertuzumab", "trastuzumab"]));
        assert!(reading.analysis.avoided.contains("endocrine_therapy"));
        assert!(reading.analysis.contingent.contains("trastuzumab deruxtecan"));
        assert!(
            reading.analysis.history.is_empty(),
            "the history is outside the plan"
        );
    }

    #[test]
    fn drug_therapy_timed_from_an_operation_is_adjuvant() {
        let ontology = ontology();
        let timed =
            ontology.analyze("Capecitabine and oxaliplatin, to start within six weeks of the operation");
        assert!(timed.classes.contains("adjuvant_therapy"), "{timed:?}");
        assert!(timed.history.contains("surgical_resection"), "{timed:?}");
        assert_eq!(timed.intent.as_deref(), Some("curative"));
        // An operation ruled out is no point in time.
        let instead = ontology.analyze("Cisplatin and vinorelbine in lieu of surgery");
        assert!(!instead.classes.contains("adjuvant_therapy"), "{instead:?}");
    }

    #[test]
    fn a_planned_length_of_time_is_not_history() {
        let ontology = ontology();
        let length = ontology.analyze("Six weeks of pelvic radiotherapy with weekly cisplatin");
        assert!(length.drugs.contains("cisplatin"), "{length:?}");
        assert!(length.classes.contains("radiotherapy"), "{length:?}");
        let after = ontology.analyze("Docetaxel after 9 months of FOLFOX");
        assert!(after.history.contains("oxaliplatin"), "{after:?}");
    }

    #[test]
    fn a_monotherapy_word_has_the_status_of_what_it_stands_beside() {
        let ontology = ontology();
        let ruled_out = ontology.analyze(
            "Pembrolizumab monotherapy is not appropriate. Carboplatin, pemetrexed and pembrolizumab.",
        );
        assert!(
            !ruled_out.classes.contains("immunotherapy_monotherapy"),
            "{ruled_out:?}"
        );
        let beside = ontology
            .analyze("Single-agent nivolumab isn't enough here; carboplatin, paclitaxel and nivolumab.");
        assert!(
            !beside.classes.contains("immunotherapy_monotherapy"),
            "{beside:?}"
        );
        let planned = ontology.analyze("1L: cemiplimab mono");
        assert!(
            planned.classes.contains("immunotherapy_monotherapy"),
            "{planned:?}"
        );
    }

    #[test]
    fn response_adapted_steps_are_part_of_the_pathway() {
        let ontology = ontology();
        let pathway =
            ontology.analyze("Neoadjuvant docetaxel, carboplatin and trastuzumab; T-DM1 if residual disease");
        assert!(pathway.drugs.contains("trastuzumab emtansine"), "{pathway:?}");
        let labelled = ontology.analyze("If non-pCR: nivolumab for a year after surgery");
        assert!(labelled.drugs.contains("nivolumab"), "{labelled:?}");
    }

    #[test]
    fn stopping_holding_and_future_treatment_read_as_meant() {
        let ontology = ontology();
        for text in ["Sunitinib should stop.", "We will stop sunitinib."] {
            let stopped = ontology.analyze(text);
            assert!(
                stopped.avoided.contains("sunitinib") && stopped.drugs.is_empty(),
                "{text}: {stopped:?}"
            );
        }
        let held = ontology.analyze("Axitinib with pembrolizumab now; cabozantinib is kept for progression");
        assert!(held.contingent.contains("cabozantinib"), "{held:?}");
        assert!(held.drugs.contains("axitinib"), "{held:?}");
        let future = ontology.analyze("The painful vertebra will be treated with radiotherapy");
        assert!(future.classes.contains("radiotherapy"), "{future:?}");
    }

    #[test]
    fn a_progressed_first_line_written_with_an_arrow_is_history() {
        let ontology = ontology();
        let plan = ontology.analyze("1L FOLFOX + pmab → PD.\n2L: FOLFIRI + bev");
        assert!(plan.history.contains("oxaliplatin"), "{plan:?}");
        assert!(
            plan.drugs.contains("irinotecan") && !plan.drugs.contains("oxaliplatin"),
            "{plan:?}"
        );
        let stopped = ontology.analyze("d/c nivo → 2L cabozantinib");
        assert!(stopped.avoided.contains("nivolumab"), "{stopped:?}");
        assert!(stopped.drugs.contains("cabozantinib"), "{stopped:?}");
    }
}
