//! Integration tests of the perturb stage.

mod coherence;
mod edits;
mod fixtures;
mod malformed;
mod roundtrip;
mod stage;
