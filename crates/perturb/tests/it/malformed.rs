//! Malformed catalogs, each with the error it must give (line:column and
//! message).

use cfeval_perturb::Catalog;

const GOOD: &str = "\
catalog: test
version: 1
interventions:
  - id: A1
    family: A
    title: HER2 flip
    applies_when:
      fact: {kind: biomarker, name: HER2, value: [positive, negative]}
    edits:
      - flip_biomarker: {name: HER2}
    expected:
      - direction: changed
        text: flip it
";

fn errors(source: &str) -> Vec<String> {
    match Catalog::from_bytes(source.as_bytes()) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => diagnostics.iter().map(ToString::to_string).collect(),
    }
}

fn assert_error(source: &str, line: usize, needle: &str) {
    let found = errors(source);
    assert!(
        found
            .iter()
            .any(|error| error.starts_with(&format!("{line}:")) && error.contains(needle)),
        "wanted line {line} `{needle}`, got {found:?}"
    );
}

#[test]
fn the_good_catalog_loads_and_the_shipped_one_checks_clean() {
    assert!(errors(GOOD).is_empty());
    let shipped =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology/catalog.yaml");
    assert_eq!(cfeval_perturb::catalog::check(&shipped), Vec::new());
    let catalog = crate::edits::catalog();
    assert_eq!(catalog.interventions().len(), 14);
    let families: std::collections::BTreeSet<_> = catalog
        .interventions()
        .iter()
        .map(|i| i.family.as_str())
        .collect();
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        vec!["A", "B", "C", "D", "E", "N"]
    );
}

#[test]
fn unknown_top_level_key() {
    assert_error(
        &GOOD.replace("version: 1", "version: 1\nauthor: me"),
        3,
        "unknown field `author`",
    );
}

#[test]
fn unknown_intervention_key() {
    assert_error(
        &GOOD.replace("    title: HER2 flip", "    title: HER2 flip\n    weight: 2"),
        7,
        "unknown field `weight`",
    );
}

#[test]
fn unknown_predicate() {
    assert_error(
        &GOOD.replace("      fact: {kind", "      facts: {kind"),
        8,
        "unknown variant `facts`",
    );
}

#[test]
fn unknown_fact_kind() {
    assert_error(
        &GOOD.replace("kind: biomarker", "kind: biomarkr"),
        8,
        "unknown fact kind `biomarkr`",
    );
}

#[test]
fn unknown_biomarker_name() {
    assert_error(
        &GOOD.replace("name: HER2, value", "name: HER3, value"),
        8,
        "unknown biomarker name `HER3`",
    );
}

#[test]
fn unknown_fact_value() {
    assert_error(
        &GOOD.replace("[positive, negative]", "[positive, maybe]"),
        8,
        "unknown biomarker value `maybe`",
    );
}

#[test]
fn duplicate_ids() {
    let twice = format!("{GOOD}{}", &GOOD[GOOD.find("  - id").unwrap_or(0)..]);
    assert_error(
        &twice,
        14,
        "duplicate intervention id `A1` (first defined on line 4)",
    );
}

#[test]
fn id_must_match_family() {
    assert_error(
        &GOOD.replace("family: A", "family: B"),
        4,
        "must start with its family letter `B`",
    );
}

#[test]
fn unknown_family() {
    assert_error(
        &GOOD.replace("family: A", "family: Z"),
        5,
        "unknown family `Z` (the oncology pack's families: A, B, C, D, E, N)",
    );
}

#[test]
fn unknown_edit_op() {
    assert_error(
        &GOOD.replace("flip_biomarker:", "flop_biomarker:"),
        10,
        "unknown variant `flop_biomarker`",
    );
}

#[test]
fn edit_of_the_wrong_family() {
    assert_error(
        &GOOD.replace("flip_biomarker: {name: HER2}", "strip_biomarker: {name: HER2}"),
        10,
        "belongs to family C, not family A",
    );
}

#[test]
fn unflippable_marker() {
    assert_error(
        &GOOD.replace("flip_biomarker: {name: HER2}", "flip_biomarker: {name: KRAS}"),
        10,
        "cannot flip biomarker `KRAS`",
    );
}

#[test]
fn empty_all() {
    assert_error(
        &GOOD.replace(
            "      fact: {kind: biomarker, name: HER2, value: [positive, negative]}",
            "      all: []",
        ),
        8,
        "`all` needs at least one predicate",
    );
}

#[test]
fn control_family_must_expect_unchanged() {
    let source = GOOD
        .replace("id: A1", "id: N1")
        .replace("family: A", "family: N")
        .replace(
            "      - flip_biomarker: {name: HER2}",
            "      - paraphrase: {pairs: [[the patient, the pt]]}",
        );
    assert_error(&source, 12, "family N must expect `unchanged`, not `changed`");
}

#[test]
fn bad_intent_and_switch_line() {
    let source = GOOD.replace(
        "        text: flip it",
        "        text: flip it\n        intent: hopeful\n        switch_line: tenth",
    );
    assert_error(&source, 14, "unknown intent `hopeful`");
    assert_error(&source, 15, "unknown switch_line `tenth`");
}

#[test]
fn unreachable_expected_branch() {
    let source = format!("{GOOD}      - direction: changed\n        text: again\n");
    assert_error(&source, 12, "can never apply");
}

#[test]
fn missing_required_key() {
    assert_error(
        &GOOD.replace("    title: HER2 flip\n", ""),
        4,
        "missing field `title`",
    );
}

#[test]
fn wrong_type() {
    assert_error(
        &GOOD.replace("version: 1", "version: one"),
        2,
        "version: invalid type",
    );
}

#[test]
fn unsupported_version() {
    assert_error(
        &GOOD.replace("version: 1", "version: 2"),
        2,
        "unsupported catalog version 2",
    );
}

#[test]
fn bad_yaml_syntax() {
    assert_error(&GOOD.replace("title: HER2 flip", "title: [HER2 flip"), 6, "");
}

#[test]
fn unknown_cancer_type() {
    assert_error(
        &GOOD.replace(
            "      fact: {kind",
            "      cancer_type: [brest]\n      #fact: {kind",
        ),
        8,
        "unknown cancer type `brest`",
    );
}

#[test]
fn reserved_baseline_id() {
    assert_error(
        &GOOD.replace("id: A1", "id: baseline"),
        4,
        "`baseline` is reserved",
    );
}

#[test]
fn no_interventions() {
    assert_error(
        "catalog: x\nversion: 1\ninterventions: []\n",
        3,
        "no interventions",
    );
}

#[test]
fn load_names_the_file() {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    };
    let path = dir.path().join("bad.yaml");
    if let Err(error) = std::fs::write(&path, GOOD.replace("kind: biomarker", "kind: nope")) {
        panic!("{error}");
    }
    let message = Catalog::load(&path)
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(message.contains("bad.yaml:8:"), "{message}");
    assert!(message.contains("unknown fact kind `nope`"), "{message}");
}
