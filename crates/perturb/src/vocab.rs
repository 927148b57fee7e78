//! The fact vocabulary a catalog may name: the pack's (`cfeval_schema::vocab`,
//! data in `data/packs/oncology/vocabulary.yaml`), its one owner.

use cfeval_schema::vocab::{FactKind, Vocabulary};

fn vocabulary() -> &'static Vocabulary {
    Vocabulary::builtin()
}

/// A fact kind by name.
pub(crate) fn kind(kind: &str) -> Option<&'static FactKind> {
    vocabulary().kind(kind)
}

/// Every fact kind's name.
pub(crate) fn kind_names() -> Vec<&'static str> {
    vocabulary()
        .fact_kinds
        .iter()
        .map(|spec| spec.kind.as_str())
        .collect()
}

/// The cancer types.
pub(crate) fn cancer_types() -> &'static [String] {
    vocabulary().values("cancer_type")
}

/// The biomarker names.
pub(crate) fn biomarkers() -> &'static [String] {
    vocabulary().names("biomarker")
}

/// The treatment intents.
pub(crate) fn intents() -> &'static [String] {
    vocabulary().values("intent")
}

/// The stage groups (without sub-stage letters).
pub(crate) fn stage_groups() -> &'static [String] {
    &vocabulary().stage_groups
}

/// Case-insensitive membership.
pub(crate) fn contains<S: AsRef<str>>(list: &[S], item: &str) -> bool {
    list.iter().any(|known| known.as_ref().eq_ignore_ascii_case(item))
}

/// A stage group without its sub-stage letter (`IIIA` → `III`).
pub(crate) fn stage_group(value: &str) -> &str {
    let trimmed = value.trim();
    let end = trimmed
        .char_indices()
        .find(|(_, c)| !matches!(c, 'I' | 'V' | '0'))
        .map_or(trimmed.len(), |(index, _)| index);
    if end == 0 { trimmed } else { &trimmed[..end] }
}
