//! Throughput of the perturb stage's CPU work: variants per second over a
//! batch of hand-written charts (all interventions of the shipped catalog),
//! on a 2-thread rayon pool. `cargo bench -p cfeval-perturb`.

#[path = "../tests/it/fixtures.rs"]
#[allow(dead_code)]
mod fixtures;

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

fn main() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology/catalog.yaml");
    let catalog = match cfeval_perturb::Catalog::load(&path) {
        Ok(catalog) => catalog,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let base = fixtures::all();
    // Distinct ids so that every case is its own work.
    let cases: Vec<_> = (0..2000)
        .map(|index| {
            let mut case = base[index % base.len()].clone();
            case.case_id = format!("{}-{index}", case.case_id);
            case
        })
        .collect();
    for threads in [1usize, 2] {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(pool) => pool,
            Err(error) => {
                eprintln!("{error}");
                std::process::exit(1);
            }
        };
        let mut best = f64::MAX;
        let mut produced = 0usize;
        let mut applicable = 0usize;
        for _ in 0..5 {
            let start = Instant::now();
            let rows: Vec<_> = pool.install(|| {
                cases
                    .par_iter()
                    .flat_map_iter(|case| cfeval_perturb::apply(&catalog, case))
                    .collect()
            });
            let elapsed = start.elapsed().as_secs_f64();
            produced = rows.len();
            applicable = rows.iter().filter(|row| row.applicable).count();
            best = best.min(elapsed);
        }
        println!(
            "threads={threads} cases={} variants={produced} applicable={applicable} best={:.3}s variants/s={:.0}",
            cases.len(),
            best,
            produced as f64 / best
        );
    }
}
