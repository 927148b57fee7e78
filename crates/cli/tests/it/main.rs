//! Integration tests of the `cfeval` binary.

mod inspect;
mod python_readers;
mod support;
