#!/usr/bin/env bash
# A 1M-tuple `cfeval run` sweep against the zero-latency test server: tuples/s end
# to end and the driver's peak RSS (goal <= 512 MiB, flat). See BENCHMARKS.md
# "Sweep (driver)" and crates/cli/benches/sweep.rs.
#
#   bash benches/sweep.sh
#
# Environment: CFEVAL_SWEEP_TUPLES (default 1000000; e.g. 100000 for a quick check),
# CFEVAL_SWEEP_DIR (where the run directory goes, default the temp dir; a 1M run
# needs a few GiB there), CFEVAL_SWEEP_CONCURRENCY (64), CFEVAL_SWEEP_RESAMPLES
# (1000), CFEVAL_SWEEP_KEEP=1 (keep the run directory).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p cfeval-cli
cargo bench --locked -p cfeval-cli --bench sweep
