//! Integration tests of the schema crate: round trips, the commit protocol,
//! crash safety and bad input.

mod bad_input;
mod crash;
mod integrity;
mod roundtrip;
mod store;
mod support;
