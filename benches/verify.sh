#!/usr/bin/env bash
# The cost of verifying what is read (BLAKE3, footers, row counts) on a
# ~100K-tuple run: judge + aggregate (`cfeval run --from judge`) with and
# without --no-verify, alternated REPS times, then the per-table cost
# (`crates/schema/benches/verify.rs` on the same run). See BENCHMARKS.md
# "Verification on read".
#
#   bash benches/verify.sh
#
# Environment: CFEVAL_VERIFY_CASES (default 4545: ~100K tuples with the four
# controls), CFEVAL_VERIFY_REPS (6), CFEVAL_VERIFY_DIR (where the run goes,
# default a temp folder, deleted afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cases=${CFEVAL_VERIFY_CASES:-4545}
reps=${CFEVAL_VERIFY_REPS:-6}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p cfeval-cli
cargo build --release --locked -q -p cfeval-schema --bench verify
cfeval="$target/release/cfeval"
bench=$(ls -t "$target"/release/deps/verify-* | grep -v '\.d$' | head -1)
dir=${CFEVAL_VERIFY_DIR:-$(mktemp -d)}
mkdir -p "$dir"
cat > "$dir/pipeline.toml" <<EOF
[run]
name = "verify-bench"
dir = "run"
seed = 1

[cases]
cohort = { cases = $cases, seed = 1 }

[catalog]
path = "$root/data/packs/oncology/catalog.yaml"

[[subjects]]
name = "control/reference"

[[subjects]]
name = "control/constant"

[[subjects]]
name = "control/blind-surgery"

[[subjects]]
name = "control/erratic"

[[judges]]
name = "rule"

[aggregate]
resamples = 1000
EOF
cd "$dir"
CFEVAL_PROGRESS=plain "$cfeval" run pipeline.toml > /dev/null 2>&1
: > times.txt
for _ in $(seq "$reps"); do
  for flag in "" "--no-verify"; do
    /usr/bin/time -f "%e" -o time.txt "$cfeval" $flag run pipeline.toml --from judge > /dev/null 2>&1
    echo "${flag:-verify} $(cat time.txt)" >> times.txt
  done
done
for kind in verify --no-verify; do
  grep -- "^$kind " times.txt | cut -d' ' -f2 | sort -n | awk -v kind="$kind" '
    { t[NR] = $1 }
    END {
      median = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
      printf "judge + aggregate (%s): median %.2f s of %d runs (min %.2f, max %.2f)\n", kind, median, NR, t[1], t[NR]
    }'
done
CFEVAL_BENCH_RUN="$dir/run" "$bench"
[ -n "${CFEVAL_VERIFY_DIR:-}" ] || rm -rf "$dir"
