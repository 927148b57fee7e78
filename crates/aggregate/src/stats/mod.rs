//! The statistics behind the scores: the seeded paired bootstrap over cases
//! (jointly across families, [`clusters`]) with percentile and BCa
//! intervals, rank probabilities from the same resamples ([`rank`]),
//! Spearman's ρ with an exact permutation p-value, and Cohen's κ (unweighted,
//! linear, quadratic; the CSS scale plus a nominal wrong-direction category),
//! the exact McNemar test of two paired binary outcomes ([`mcnemar`]), and
//! Student's t distribution ([`student`]) for the tests of `cfeval power`.

pub mod bootstrap;
pub mod clusters;
pub mod kappa;
pub mod mcnemar;
pub mod normal;
pub mod rank;
pub mod rng;
pub mod student;

pub use bootstrap::{BootstrapResult, Design, Estimate, Options, Series, Statistic, Term, bootstrap};
pub use clusters::{Cells, Clustered, Resampling};
pub use kappa::{Weights, cohen_kappa, css_kappa};
pub use mcnemar::mcnemar_exact;
pub use rank::{
    RankProbabilities, average_ranks, descending_ranks, rank_probabilities, spearman, spearman_exact,
};
pub use rng::Rng;
