//! Integration tests of the `cfeval` binary.

mod answers;
mod bad_inputs;
mod batch;
mod compare;
mod concurrency;
mod corruption;
mod dialogue;
mod driver;
mod harness;
mod import;
mod infer_resume;
mod inspect;
mod inspect_logs;
mod judge;
mod packs;
mod pipeline_files;
mod power;
mod python_readers;
mod recipes;
mod rubric;
mod rubric_judge;
mod samples;
mod support;
