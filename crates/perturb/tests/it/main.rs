//! Integration tests of the perturb stage.

mod edits;
mod fixtures;
mod malformed;
mod roundtrip;
mod stage;
