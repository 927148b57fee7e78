//! E-Synthesis: raw clinical cases to structured charts (`cases`). Lands with its issue.
