//! Same seed, same bytes; same input, same shards.

use std::collections::BTreeMap;
use std::path::Path;

use cfeval_synthesize::cohort::{self, CohortConfig};
use cfeval_synthesize::{Config, run};

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension != "lock") {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn same_seed_gives_a_byte_identical_cohort() {
    let config = CohortConfig { cases: 40, seed: 5 };
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    cohort::write(&cohort::generate(&config).unwrap(), first.path()).unwrap();
    cohort::write(&cohort::generate(&config).unwrap(), second.path()).unwrap();
    let (first, second) = (files(first.path()), files(second.path()));
    assert_eq!(first.len(), 41);
    assert_eq!(first, second);
}

#[test]
fn same_input_gives_identical_case_shards() {
    let dir = tempfile::tempdir().unwrap();
    let written = cohort::write(
        &cohort::generate(&CohortConfig { cases: 30, seed: 6 }).unwrap(),
        dir.path(),
    )
    .unwrap();
    let config = Config::default();
    let (first, second) = (dir.path().join("run-a"), dir.path().join("run-b"));
    run(&config, std::slice::from_ref(&written.jsonl), &first).unwrap();
    run(&config, std::slice::from_ref(&written.jsonl), &second).unwrap();
    let (first, second) = (files(&first.join("cases")), files(&second.join("cases")));
    assert!(first.keys().any(|name| name.ends_with(".parquet")));
    assert_eq!(first, second);
}
