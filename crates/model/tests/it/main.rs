//! Integration tests: the HTTP backends and the sweep client against the crate's own
//! fault-injecting test server over real TCP.

mod anthropic;
mod batch;
mod faults;
mod openai;
mod secrets;
mod support;
