//! The aggregate stage: scores with bootstrap CIs and the report. Lands with its issue.
