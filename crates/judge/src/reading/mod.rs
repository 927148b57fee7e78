//! Reading a reply as a clinician does: [`plan`] finds where the reply states
//! its plan, [`context`] tells what it says about each treatment or test
//! (planned, negated, historical, conditional, hypothetical). The ontology
//! ([`crate::ontology`]) supplies every phrase both use.

pub mod context;
pub mod mention;
pub mod plan;

pub use crate::ontology::words;
