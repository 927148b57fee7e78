//! Integration tests of the `cfeval` binary.

mod answers;
mod corruption;
mod driver;
mod gold;
mod infer_resume;
mod inspect;
mod judge;
mod pipeline_files;
mod python_readers;
mod support;
