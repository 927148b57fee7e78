//! Helpers over the vocabulary's strings. The vocabulary itself (the pack's,
//! `cfeval_schema::vocab`) reaches the catalog's checks with the catalog.

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
