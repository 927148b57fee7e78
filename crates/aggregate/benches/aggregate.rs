//! End-to-end aggregate benchmark (harness = false), driven by
//! `benches/aggregate.sh` against `benches/aggregate_numpy.py`.
//!
//! `aggregate generate DIR` writes ~1M synthetic judgments (6 subjects × 2
//! modes × 2 judges × 224 cases × 13 rows × 15 replicates) with the schema
//! crate's shard writer; `aggregate run DIR` times reading them, 10,000
//! paired resamples of the cases with percentile and BCa intervals for every
//! estimate, and writing the scores, then prints one JSON line (seconds,
//! peak RSS of the process).

use std::path::PathBuf;
use std::time::Instant;

use cfeval_aggregate::synthetic::{Shape, write_judgments};
use cfeval_aggregate::{Config, compute, write_scores};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let (Some(command), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: aggregate (generate|run) DIR   (cargo bench runs nothing without arguments)");
        return Ok(());
    };
    let dir = PathBuf::from(dir);
    let replicates: usize = std::env::var("CFEVAL_BENCH_REPLICATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    match command.as_str() {
        "generate" => {
            let shape = Shape::standard(224, replicates, 2);
            let start = Instant::now();
            let rows = write_judgments(&shape, &dir)?;
            println!(
                "{{\"generated_rows\": {rows}, \"seconds\": {:.3}}}",
                start.elapsed().as_secs_f64()
            );
        }
        "run" => {
            let resamples: usize = std::env::var("CFEVAL_BENCH_RESAMPLES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10_000);
            let config = Config {
                resamples,
                ..Config::default()
            };
            let start = Instant::now();
            let computed = compute(&config, &dir)?;
            let computed_at = start.elapsed().as_secs_f64();
            let fingerprint = cfeval_aggregate::fingerprint(&config, &dir)?;
            write_scores(&dir, &computed, &fingerprint)?;
            let total = start.elapsed().as_secs_f64();
            println!(
                "{{\"rows\": {}, \"estimates\": {}, \"score_rows\": {}, \"resamples\": {resamples}, \"compute_s\": {computed_at:.3}, \"total_s\": {total:.3}, \"peak_rss_mib\": {:.1}, \"threads\": {}}}",
                computed.report.judgments,
                computed.report.estimates,
                computed.report.score_rows,
                peak_rss_mib(),
                rayon::current_num_threads()
            );
        }
        other => return Err(format!("unknown command {other}").into()),
    }
    Ok(())
}
