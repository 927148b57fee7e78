//! The infer stage: every subject on every variant. Lands with its issue.
