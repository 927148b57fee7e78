//! Integration tests of cfeval-aggregate.

mod reference;
mod run;
mod simulation;
