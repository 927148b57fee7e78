#!/usr/bin/env bash
# End-to-end aggregate benchmark: ~1M judgments from Parquet, 10,000 stratified
# paired resamples, percentile + BCa CIs for every estimate, scores written —
# cfeval (crates/aggregate/benches/aggregate.rs) vs pyarrow + NumPy
# (benches/aggregate_numpy.py), same data, same run.
# Usage: bash benches/aggregate.sh   (after bash scripts/install.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p cfeval-aggregate --bench aggregate
bench=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/aggregate-* | grep -v '\.d$' | head -1)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bench" generate "$dir" >&2
rust=$("$bench" run "$dir")
python=$(.venv/bin/python benches/aggregate_numpy.py "$dir" "${CFEVAL_BENCH_RESAMPLES:-10000}")
echo "$rust"
echo "$python"
.venv/bin/python - "$rust" "$python" <<'PY'
import json, sys
r, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{r['rows']:,} judgments, {r['estimates']} estimates (python {p['estimates']}), {r['resamples']:,} resamples")
print(f"cfeval {r['total_s']:.2f} s, peak RSS {r['peak_rss_mib']:.0f} MiB; "
      f"pyarrow+numpy {p['total_s']:.2f} s, peak RSS {p['peak_rss_mib']:.0f} MiB; "
      f"speed-up {p['total_s'] / r['total_s']:.2f}x")
PY
