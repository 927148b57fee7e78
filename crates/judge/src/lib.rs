//! The judge stage: CSS pair judging and CMS. Lands with its issue.
