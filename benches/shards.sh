#!/usr/bin/env bash
# Shard write/read throughput of cfeval vs pyarrow on the same 1M judgments rows.
# Usage: bash benches/shards.sh   (after bash scripts/install.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export CFEVAL_BENCH_ROWS=${CFEVAL_BENCH_ROWS:-1000000}
cargo build --release -q -p cfeval-schema --bench shards
bench=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/shards-* | grep -v '\.d$' | head -1)
rust=$("$bench")
python=$(.venv/bin/python benches/shards_pyarrow.py)
echo "$rust"
echo "$python"
.venv/bin/python - "$rust" "$python" <<'PY'
import json, sys
r, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"write: cfeval {r['write_rows_per_s']:,.0f} rows/s vs pyarrow {p['write_rows_per_s']:,.0f} rows/s -> ratio {r['write_rows_per_s']/p['write_rows_per_s']:.2f}x")
print(f"read:  cfeval {r['read_rows_per_s']:,.0f} rows/s vs pyarrow {p['read_rows_per_s']:,.0f} rows/s -> ratio {r['read_rows_per_s']/p['read_rows_per_s']:.2f}x")
print(f"decode to rows: cfeval {r['decode_s']:.3f} s vs pyarrow to_pylist {p['decode_s']:.3f} s")
print(f"peak RSS: cfeval {r['peak_rss_mib']:.0f} MiB, pyarrow {p['peak_rss_mib']:.0f} MiB; file {r['bytes']/1e6:.1f} MB vs {p['bytes']/1e6:.1f} MB")
PY
