//! The aggregate stage: judgments in, scores (long format, one row per
//! estimate) and the report out.
//!
//! - [`stats`]: the seeded stratified paired bootstrap (percentile and BCa
//!   intervals), Spearman's ρ with an exact permutation p-value, Cohen's κ.

pub mod accumulate;
pub mod error;
pub mod stats;

pub use error::{Error, Result};
