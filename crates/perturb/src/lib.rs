//! The perturb stage: the pre-registered intervention catalog applied to every case. Lands with its issue.
