//! Integration tests of cfeval-aggregate.

mod reference;
mod simulation;
