//! Grading answers and pairs (being written).
