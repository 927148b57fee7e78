//! Integration tests of the `cfeval` binary.

mod inspect;
mod judge;
mod python_readers;
mod support;
