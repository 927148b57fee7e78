//! Integration tests of cfeval-report.

mod browser;
mod report;
mod support;
