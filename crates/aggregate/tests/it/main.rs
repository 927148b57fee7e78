//! Integration tests of cfeval-aggregate.

mod notebook;
mod reference;
mod run;
mod simulation;
