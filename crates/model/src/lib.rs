//! The model-access layer (backends behind one chat trait). Lands with the infer issue.
