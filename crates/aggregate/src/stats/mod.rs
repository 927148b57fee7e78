//! The statistics behind the scores: the seeded stratified paired bootstrap
//! with percentile and BCa intervals, Spearman's ρ with an exact permutation
//! p-value, and Cohen's κ (unweighted, linear, quadratic).

pub mod bootstrap;
pub mod kappa;
pub mod normal;
pub mod rank;
pub mod rng;

pub use bootstrap::{BootstrapResult, Design, Estimate, Options, Series, Statistic, bootstrap};
pub use kappa::{Weights, cohen_kappa};
pub use rank::{average_ranks, descending_ranks, spearman, spearman_exact};
pub use rng::Rng;
